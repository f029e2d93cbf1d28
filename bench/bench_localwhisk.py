"""Benchmark localwhisk on this machine and print the figures (no pass/fail).

Measures, through the REST API with real clients:
  1. warm no-op Python action, blocking, client-observed latency (p50, p99);
  2. cold start of a no-op Python and Node.js action (client-observed, plus waitTime/initTime);
  3. non-blocking no-op throughput (accepted/s and completed/s);
  4. memory per idle warm sandbox (cgroup usage and PSS of the launcher).

Usage: .venv/bin/python bench/bench_localwhisk.py [--warm N] [--cold N] [--throughput N] [--connections C]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localwhisk.embedded import start_embedded  # noqa: E402

NOOP_PY = "def main(args):\n    return {}\n"
NOOP_JS = "function main(args) { return {}; }\n"


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(q / 100.0 * (len(values) - 1)))))
    return values[k]


def annotation(record, key, default=None):
    for a in record.get("annotations", []):
        if a["key"] == key:
            return a["value"]
    return default


class Api:
    def __init__(self, handle):
        self.base = handle.apihost + "/api/v1/namespaces/_"
        self.session = requests.Session()
        self.session.auth = tuple(handle.auth.split(":", 1))
        self.handle = handle

    def put(self, name, kind, code, memory=256):
        r = self.session.put(f"{self.base}/actions/{name}?overwrite=true",
                             json={"exec": {"kind": kind, "code": code}, "limits": {"memory": memory}})
        r.raise_for_status()

    def invoke(self, name, blocking=True):
        return self.session.post(f"{self.base}/actions/{name}?blocking={str(blocking).lower()}", json={})


def bench_warm(api, n):
    api.put("noop-py", "python:3", NOOP_PY)
    for _ in range(20):
        api.invoke("noop-py")
    lat = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        r = api.invoke("noop-py")
        lat.append((time.perf_counter_ns() - t0) / 1e6)
        assert r.status_code == 200, r.text
    print(f"warm no-op python, blocking, client-observed: n={n} p50={pct(lat, 50):.2f} ms p90={pct(lat, 90):.2f} ms "
          f"p99={pct(lat, 99):.2f} ms mean={statistics.mean(lat):.2f} ms")


def bench_cold(api, n, kind, code, label):
    lat, waits, inits = [], [], []
    for i in range(n):
        name = f"cold-{label}-{i}"
        api.put(name, kind, code)
        t0 = time.perf_counter_ns()
        r = api.invoke(name)
        lat.append((time.perf_counter_ns() - t0) / 1e6)
        rec = r.json()
        waits.append(annotation(rec, "waitTime", 0))
        inits.append(annotation(rec, "initTime", 0))
        api.session.delete(f"{api.base}/actions/{name}")
        time.sleep(0.05)
    print(f"cold start no-op {label}: n={n} client p50={pct(lat, 50):.1f} ms p90={pct(lat, 90):.1f} ms "
          f"(waitTime p50={pct(waits, 50)} ms, initTime p50={pct(inits, 50)} ms)")


async def bench_throughput(handle, n, connections):
    import aiohttp

    url = handle.apihost + "/api/v1/namespaces/_/actions/noop-py?blocking=false"
    import base64

    headers = {"Authorization": "Basic " + base64.b64encode(handle.auth.encode()).decode()}
    ids = []
    counter = iter(range(n))
    errors = 0

    async def worker(session):
        nonlocal errors
        for _ in counter:
            async with session.post(url, data=b"{}", headers={"Content-Type": "application/json"}) as r:
                if r.status == 202:
                    ids.append((await r.json())["activationId"])
                else:
                    errors += 1
                    await r.read()

    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(connections)))
        accepted_s = time.perf_counter() - t0
        # Completed: poll the pool until nothing is running or queued.
        while True:
            async with session.get(handle.apihost + "/localwhisk/v1/pool") as r:
                pool = (await r.json())["pool"]
            if pool["running"] == 0 and pool["queued"] == 0:
                break
            await asyncio.sleep(0.01)
        completed_s = time.perf_counter() - t0
    print(f"non-blocking no-op throughput: n={n} connections={connections} accepted {len(ids) / accepted_s:.0f}/s, "
          f"completed {len(ids) / completed_s:.0f}/s (errors {errors})")


def bench_memory(api, k):
    for i in range(k):
        api.put(f"mem-py-{i}", "python:3", NOOP_PY)
        api.invoke(f"mem-py-{i}")
    api.put("mem-js", "nodejs:default", NOOP_JS)
    api.invoke("mem-js")
    time.sleep(0.5)
    pool = api.session.get(api.handle.apihost + "/localwhisk/v1/pool").json()["pool"]
    py_cg, py_pss, js_cg, js_pss = [], [], [], []
    for sb in pool["sandboxes"]:
        if not (sb["action"] or "").startswith("mem-"):
            continue
        pss = _pss_kb(sb["pid"])
        if sb["kind"].startswith("python"):
            py_cg.append((sb["memory_usage_bytes"] or 0) / 2**20)
            py_pss.append(pss / 1024)
        else:
            js_cg.append((sb["memory_usage_bytes"] or 0) / 2**20)
            js_pss.append(pss / 1024)
    if py_pss:
        print(f"idle warm (paused) python sandbox: PSS {statistics.mean(py_pss):.1f} MB, cgroup usage {statistics.mean(py_cg):.1f} MB "
              f"(mean of {len(py_pss)})")
    if js_pss:
        print(f"idle warm (paused) node.js sandbox: PSS {statistics.mean(js_pss):.1f} MB, cgroup usage {statistics.mean(js_cg):.1f} MB")


def _pss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=1000)
    parser.add_argument("--cold", type=int, default=20)
    parser.add_argument("--throughput", type=int, default=6000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--memory", type=int, default=8)
    args = parser.parse_args()
    with start_embedded() as handle:
        print(f"localwhisk {handle.apihost} isolation={handle.settings['isolation']} pause_grace_ms={handle.settings['pause_grace_ms']} "
              f"cores={os.cpu_count()} loadavg={' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        api = Api(handle)
        bench_warm(api, args.warm)
        bench_cold(api, args.cold, "python:3", NOOP_PY, "python")
        bench_cold(api, args.cold, "nodejs:default", NOOP_JS, "nodejs")
        asyncio.run(bench_throughput(handle, args.throughput, args.connections))
        bench_memory(api, args.memory)
        print(f"loadavg at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (other processes share these cores)")


if __name__ == "__main__":
    main()
