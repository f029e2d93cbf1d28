"""Benchmark localwhisk on this machine and print each figure beside its target (no pass/fail).

Targets (issue 22): warm no-op p50 <= 2 ms and >= 2,000 completed no-op activations/s with
process isolation; the Docker isolation's figures are printed beside them. Measured through the
REST API, per isolation (``--isolation process`` = localwhisk's default ``auto``: processes in
cgroups where writable; ``docker`` = one container per sandbox):

  1. warm latency at low load: one keep-alive connection, blocking no-op calls back to back
     (client-observed p50/p99, and the server's CPU per activation);
  2. blocking throughput: ``--sandboxes`` keep-alive connections, each calling blocking no-ops
     back to back for ``--duration`` seconds on as many warm sandboxes (completed = answered);
  3. non-blocking throughput: ``--connections`` keep-alive connections send ``--count``
     non-blocking no-ops as fast as they are accepted onto ``--sandboxes`` warm sandboxes;
     completed/s = count / (time from the first send until the pool is empty);
  4. optional (``--cold N``, ``--memory K``): cold starts, idle memory per paused sandbox.

The load generator is a separate process (this file with ``--loadgen``): raw HTTP/1.1 over
keep-alive connections, parsed with httptools under uvloop, so it costs a fraction of what the
server does; its own CPU-seconds are printed. Each figure carries the 1-minute load average when
it was taken and the CPU-seconds per activation of the localwhisk server process (user+system from
/proc, the figure that stays reliable when other work shares the cores) and of the sandboxes.
Nothing is pinned: server, sandboxes and load generator share all cores of the machine with
whatever else runs (``os.cpu_count()`` is printed).

Usage: .venv/bin/python bench/bench_localwhisk.py [--isolation process,docker] [--warm N] [--duration S]
           [--count N] [--connections C] [--sandboxes K] [--cold N] [--memory K] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faasprof.localwhisk.embedded import start_embedded  # noqa: E402

FORMAT_VERSION = 1  # of the --json result file
NOOP_PY = "def main(args):\n    return {}\n"
NOOP_JS = "function main(args) { return {}; }\n"
TARGET_P50_MS = 2.0
TARGET_COMPLETED_PER_S = 2000.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(q / 100.0 * (len(values) - 1)))))
    return values[k]


def loadavg() -> float:
    return os.getloadavg()[0]


def annotation(record, key, default=None):
    for a in record.get("annotations", []):
        if a["key"] == key:
            return a["value"]
    return default


def cpu_s(pid: int) -> float:
    """User + system CPU-seconds of one process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def container_cpu_s(container_id12: str) -> float | None:
    """CPU-seconds of a container's cgroup (cgroup v1 cpuacct or v2 cpu.stat); None if not found."""
    for path in Path("/sys/fs/cgroup/cpuacct/docker").glob(f"{container_id12}*/cpuacct.usage"):
        return int(path.read_text()) / 1e9
    for base in ("/sys/fs/cgroup/system.slice", "/sys/fs/cgroup/docker"):
        for path in list(Path(base).glob(f"docker-{container_id12}*.scope/cpu.stat")) + list(
            Path(base).glob(f"{container_id12}*/cpu.stat")
        ):
            for line in path.read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    return None


# -- load generator (runs in its own process) --------------------------------------------------------


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection with one request outstanding at a time."""

    def __init__(self, httptools):
        self.parser = httptools.HttpResponseParser(self)
        self.transport = None
        self.waiter: asyncio.Future | None = None
        self.body = bytearray()
        self.connected = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport
        self.connected.set_result(None)

    def data_received(self, data):
        self.parser.feed_data(data)

    def on_body(self, body):
        self.body += body

    def on_message_complete(self):
        status = self.parser.get_status_code()
        body, self.body = bytes(self.body), bytearray()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((status, body))

    def connection_lost(self, exc):
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((0, b""))

    async def request(self, data: bytes):
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return await self.waiter


async def _loadgen(spec: dict) -> dict:
    import httptools

    loop = asyncio.get_running_loop()
    host, port = spec["host"], spec["port"]
    path = spec["path"]
    auth = base64.b64encode(spec["auth"].encode()).decode()
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Basic {auth}\r\n"
        f"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    ).encode()
    conns = []
    for _ in range(spec["connections"]):
        _, proto = await loop.create_connection(lambda: _Conn(httptools), host, port)
        await proto.connected
        conns.append(proto)
    count = spec.get("count")
    deadline_s = spec.get("duration_s")
    statuses: dict[int, int] = {}
    errors: list[str] = []  # the first few bodies of failed calls, to say what failed
    latencies_ms: list[float] = []
    remaining = [count if count is not None else 1 << 62]
    cpu0 = os.times()
    t0 = time.monotonic()
    end_at = t0 + deadline_s if deadline_s else None

    async def worker(conn):
        while remaining[0] > 0 and (end_at is None or time.monotonic() < end_at):
            remaining[0] -= 1
            sent = time.perf_counter_ns()
            status, body = await conn.request(request)
            latencies_ms.append((time.perf_counter_ns() - sent) / 1e6)
            statuses[status] = statuses.get(status, 0) + 1
            if status >= 300 and len(errors) < 3:
                errors.append(body[:300].decode("utf-8", "replace"))

    await asyncio.gather(*(worker(c) for c in conns))
    t1 = time.monotonic()
    cpu1 = os.times()
    for c in conns:
        c.transport.close()
    return {
        "t0_mono_s": t0,
        "t1_mono_s": t1,
        "statuses": statuses,
        "errors": errors,
        "latencies_ms": latencies_ms,
        "cpu_s": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
    }


def loadgen_main(spec_text: str) -> None:
    spec = json.loads(spec_text)
    try:
        import uvloop

        result = uvloop.run(_loadgen(spec))
    except ImportError:
        result = asyncio.run(_loadgen(spec))
    # A file, not stdout: the latencies of a long run are megabytes.
    Path(spec["out"]).write_text(json.dumps(result))


def run_loadgen(handle, path: str, connections: int, count: int | None = None, duration_s: float | None = None) -> dict:
    host_port = handle.apihost.split("://", 1)[1]
    host, port = host_port.rsplit(":", 1)
    with tempfile.TemporaryDirectory(prefix="bench-localwhisk-") as tmp:
        spec = {
            "host": host,
            "port": int(port),
            "path": path,
            "auth": handle.auth,
            "connections": connections,
            "count": count,
            "duration_s": duration_s,
            "out": str(Path(tmp) / "result.json"),
        }
        subprocess.run([sys.executable, __file__, "--loadgen", json.dumps(spec)], check=True)
        result = json.loads(Path(spec["out"]).read_text())
    for body in result["errors"]:
        print(f"    failed call: {body}")
    return result


# -- the server side -----------------------------------------------------------------------------------


class Api:
    def __init__(self, handle):
        self.base = handle.apihost + "/api/v1/namespaces/_"
        self.session = requests.Session()
        self.session.auth = tuple(handle.auth.split(":", 1))
        self.handle = handle

    def put(self, name, kind, code, memory=256):
        r = self.session.put(
            f"{self.base}/actions/{name}?overwrite=true",
            json={"exec": {"kind": kind, "code": code}, "limits": {"memory": memory}},
        )
        r.raise_for_status()

    def invoke(self, name, blocking=True):
        return self.session.post(f"{self.base}/actions/{name}?blocking={str(blocking).lower()}", json={})

    def pool(self) -> dict:
        return self.session.get(self.handle.apihost + "/localwhisk/v1/pool").json()["pool"]


class CpuMeter:
    """CPU-seconds of the server process and of its sandbox processes between start() and stop()."""

    def __init__(self, api: Api, server_pid: int, isolation: str):
        self.api, self.server_pid, self.isolation = api, server_pid, isolation

    def _sandboxes(self) -> dict:
        if self.isolation == "docker":  # the container's cgroup: its proxy and launcher together
            return {
                sb["container_id"]: container_cpu_s(sb["container_id"])
                for sb in self.api.pool()["sandboxes"]
                if sb.get("container_id")
            }
        return {sb["pid"]: cpu_s(sb["pid"]) for sb in self.api.pool()["sandboxes"] if sb.get("pid")}

    def start(self):
        self.server0 = cpu_s(self.server_pid)
        self.sandboxes0 = self._sandboxes()

    def stop(self) -> tuple[float, float | None]:
        server = cpu_s(self.server_pid) - self.server0
        now = self._sandboxes()
        if any(v is None for v in now.values()):
            return server, None
        return server, sum(v - (self.sandboxes0.get(key) or 0.0) for key, v in now.items())


def cpu_text(server_s: float, sandboxes_s: float | None, loadgen_s: float, n: int) -> str:
    if n <= 0:
        return "no activations"
    sandboxes = "n/a" if sandboxes_s is None else f"{sandboxes_s / n * 1e6:.0f} µs"
    return (
        f"CPU per activation: server {server_s / n * 1e6:.0f} µs, sandboxes {sandboxes}, "
        f"load generator {loadgen_s / n * 1e6:.0f} µs"
    )


def ceiling_per_s(server_s: float, sandboxes_s: float | None, n: int) -> float | None:
    """What these CPU costs allow on idle cores: the server is one thread (at most one core) and
    server plus sandboxes share all cores (the client's CPU is left out). Shared cores give less."""
    if sandboxes_s is None or n <= 0 or server_s <= 0:
        return None
    return min(n / server_s, (os.cpu_count() or 1) * n / (server_s + sandboxes_s))


def wait_pool_empty(api: Api, timeout_s: float = 300.0) -> float:
    """Poll until nothing runs or waits; returns the monotonic time it was first seen empty."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pool = api.pool()
        seen = time.monotonic()
        if pool["running"] == 0 and pool["queued"] == 0:
            return seen
        time.sleep(0.02)  # each poll costs the server a pool description; 20 ms is <= 0.2 % of a 10 s run
    raise TimeoutError("the pool did not drain")


def warm_up(handle, api: Api, sandboxes: int) -> int:
    """Make ``sandboxes`` warm no-op sandboxes (concurrent blocking calls); returns how many exist."""
    path = "/api/v1/namespaces/_/actions/noop-py?blocking=true"
    run_loadgen(handle, path, sandboxes, duration_s=2.0)
    return sum(1 for sb in api.pool()["sandboxes"] if sb["action"] == "noop-py")


def bench_warm(handle, api, meter, n) -> dict:
    path = "/api/v1/namespaces/_/actions/noop-py?blocking=true"
    run_loadgen(handle, path, 1, count=200)
    load = loadavg()
    meter.start()
    res = run_loadgen(handle, path, 1, count=n)
    server_s, sandboxes_s = meter.stop()
    lat = res["latencies_ms"]
    ok = res["statuses"].get("200", 0)
    p50 = pct(lat, 50)
    print(
        f"  warm no-op, blocking, 1 connection, client-observed: n={n} p50={p50:.2f} ms (target <= {TARGET_P50_MS:g} ms) "
        f"p90={pct(lat, 90):.2f} ms p99={pct(lat, 99):.2f} ms  [loadavg {load:.1f}]"
    )
    print(f"    {cpu_text(server_s, sandboxes_s, res['cpu_s'], ok)}; statuses {res['statuses']}")
    return {
        "n": n,
        "p50_ms": p50,
        "p90_ms": pct(lat, 90),
        "p99_ms": pct(lat, 99),
        "mean_ms": statistics.mean(lat),
        "loadavg": load,
        "server_cpu_us": server_s / max(ok, 1) * 1e6,
        "sandbox_cpu_us": None if sandboxes_s is None else sandboxes_s / max(ok, 1) * 1e6,
        "loadgen_cpu_us": res["cpu_s"] / max(ok, 1) * 1e6,
    }


def bench_blocking(handle, api, meter, connections, duration_s) -> dict:
    path = "/api/v1/namespaces/_/actions/noop-py?blocking=true"
    load = loadavg()
    meter.start()
    res = run_loadgen(handle, path, connections, duration_s=duration_s)
    server_s, sandboxes_s = meter.stop()
    ok = res["statuses"].get("200", 0)
    rate = ok / (res["t1_mono_s"] - res["t0_mono_s"])
    lat = res["latencies_ms"]
    print(
        f"  blocking no-op throughput, {connections} connections for {duration_s:g} s: completed {rate:.0f}/s "
        f"(target >= {TARGET_COMPLETED_PER_S:.0f}/s), latency p50={pct(lat, 50):.2f} ms p99={pct(lat, 99):.2f} ms  [loadavg {load:.1f}]"
    )
    print(
        f"    {cpu_text(server_s, sandboxes_s, res['cpu_s'], ok)}; server busy {server_s / (res['t1_mono_s'] - res['t0_mono_s']) * 100:.0f} % "
        f"of one core; statuses {res['statuses']}"
    )
    ceiling = ceiling_per_s(server_s, sandboxes_s, ok)
    if ceiling is not None:
        print(
            f"    ceiling from these CPU costs on {os.cpu_count()} idle cores: {ceiling:.0f}/s (the single-threaded server "
            f"alone allows {ok / server_s:.0f}/s)"
        )
    return {
        "connections": connections,
        "completed_per_s": rate,
        "p50_ms": pct(lat, 50),
        "p99_ms": pct(lat, 99),
        "loadavg": load,
        "ceiling_per_s": ceiling,
        "server_cpu_us": server_s / max(ok, 1) * 1e6,
        "sandbox_cpu_us": None if sandboxes_s is None else sandboxes_s / max(ok, 1) * 1e6,
        "loadgen_cpu_us": res["cpu_s"] / max(ok, 1) * 1e6,
        "statuses": res["statuses"],
    }


def bench_nonblocking(handle, api, meter, connections, count) -> dict:
    path = "/api/v1/namespaces/_/actions/noop-py?blocking=false"
    load = loadavg()
    meter.start()
    res = run_loadgen(handle, path, connections, count=count)
    empty_at = wait_pool_empty(api)
    server_s, sandboxes_s = meter.stop()
    accepted = res["statuses"].get("202", 0)
    accepted_rate = accepted / (res["t1_mono_s"] - res["t0_mono_s"])
    completed_rate = accepted / (empty_at - res["t0_mono_s"])
    print(
        f"  non-blocking no-op throughput, {connections} connections, n={count}: accepted {accepted_rate:.0f}/s, "
        f"completed {completed_rate:.0f}/s (target >= {TARGET_COMPLETED_PER_S:.0f}/s)  [loadavg {load:.1f}]"
    )
    print(f"    {cpu_text(server_s, sandboxes_s, res['cpu_s'], accepted)}; statuses {res['statuses']}")
    return {
        "connections": connections,
        "count": count,
        "accepted_per_s": accepted_rate,
        "completed_per_s": completed_rate,
        "loadavg": load,
        "server_cpu_us": server_s / max(accepted, 1) * 1e6,
        "sandbox_cpu_us": None if sandboxes_s is None else sandboxes_s / max(accepted, 1) * 1e6,
        "loadgen_cpu_us": res["cpu_s"] / max(accepted, 1) * 1e6,
        "statuses": res["statuses"],
    }


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
    print(
        f"  cold start no-op {label}: n={n} client p50={pct(lat, 50):.1f} ms p90={pct(lat, 90):.1f} ms "
        f"(waitTime p50={pct(waits, 50)} ms, initTime p50={pct(inits, 50)} ms)  [loadavg {loadavg():.1f}]"
    )


def bench_memory(api, k):
    for i in range(k):
        api.put(f"mem-py-{i}", "python:3", NOOP_PY)
        api.invoke(f"mem-py-{i}")
    time.sleep(0.5)
    usage = [
        (sb["memory_usage_bytes"] or 0) / 2**20
        for sb in api.pool()["sandboxes"]
        if (sb["action"] or "").startswith("mem-")
    ]
    if usage:
        print(
            f"  idle warm (paused) python sandbox: cgroup usage {statistics.mean(usage):.1f} MB (mean of {len(usage)})"
        )


def run_isolation(isolation: str, args) -> dict:
    # Exactly --sandboxes slots of 256 MB: the warm-up fills them, and a non-blocking burst then
    # queues in the run buffer instead of cold-starting sandboxes during the measurement.
    settings = {"user_memory_mb": 256 * max(args.sandboxes, 1)}
    if isolation == "docker":
        settings["isolation"] = "docker"
    out = {}
    with start_embedded(**settings) as handle:
        print(
            f"isolation {isolation}: localwhisk {handle.apihost} mode={handle.settings['isolation']} "
            f"pause_grace_ms={handle.settings['pause_grace_ms']} cores={os.cpu_count()} (nothing pinned) loadavg {loadavg():.1f}"
        )
        api = Api(handle)
        api.put("noop-py", "python:3", NOOP_PY)
        meter = CpuMeter(api, handle.process.pid, isolation)
        warm = warm_up(handle, api, args.sandboxes)
        print(f"  warm no-op sandboxes: {warm}")
        out.update({"isolation": handle.settings["isolation"], "warm_sandboxes": warm})
        out["warm"] = bench_warm(handle, api, meter, args.warm)
        out["blocking"] = bench_blocking(handle, api, meter, args.sandboxes, args.duration)
        out["nonblocking"] = bench_nonblocking(handle, api, meter, args.connections, args.count)
    if args.cold or args.memory:
        settings["user_memory_mb"] = 4096
        with start_embedded(**settings) as handle:
            api = Api(handle)
            if args.cold:
                bench_cold(api, args.cold, "python:3", NOOP_PY, "python")
                if isolation != "docker":
                    bench_cold(api, args.cold, "nodejs:default", NOOP_JS, "nodejs")
            if args.memory:
                bench_memory(api, args.memory)
    return out


def summary(results: dict) -> None:
    cols = list(results)
    print("\nsummary (targets apply to process isolation):")
    print(f"  {'figure':<42}{'target':>12}" + "".join(f"{c:>14}" for c in cols))

    def row(label, target, get, fmt):
        print(f"  {label:<42}{target:>12}" + "".join(f"{fmt(get(results[c])):>14}" for c in cols))

    row("warm p50, 1 connection (ms)", f"<= {TARGET_P50_MS:g}", lambda r: r["warm"]["p50_ms"], lambda v: f"{v:.2f}")
    row("warm p99, 1 connection (ms)", "", lambda r: r["warm"]["p99_ms"], lambda v: f"{v:.2f}")
    row(
        "completed/s, blocking",
        f">= {TARGET_COMPLETED_PER_S:.0f}",
        lambda r: r["blocking"]["completed_per_s"],
        lambda v: f"{v:.0f}",
    )
    row(
        "completed/s, non-blocking",
        f">= {TARGET_COMPLETED_PER_S:.0f}",
        lambda r: r["nonblocking"]["completed_per_s"],
        lambda v: f"{v:.0f}",
    )
    row("server CPU per activation, blocking (µs)", "", lambda r: r["blocking"]["server_cpu_us"], lambda v: f"{v:.0f}")
    row(
        "server CPU per activation, non-blocking (µs)",
        "",
        lambda r: r["nonblocking"]["server_cpu_us"],
        lambda v: f"{v:.0f}",
    )
    row("load generator CPU per activation (µs)", "", lambda r: r["blocking"]["loadgen_cpu_us"], lambda v: f"{v:.0f}")
    row(
        f"ceiling from CPU cost, {os.cpu_count()} idle cores (/s)",
        f">= {TARGET_COMPLETED_PER_S:.0f}",
        lambda r: r["blocking"]["ceiling_per_s"],
        lambda v: "n/a" if v is None else f"{v:.0f}",
    )
    row("loadavg (1 min) during blocking", "", lambda r: r["blocking"]["loadavg"], lambda v: f"{v:.1f}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--loadgen":
        loadgen_main(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolation", default="process,docker", help="comma-separated: process, docker")
    parser.add_argument("--warm", type=int, default=2000, help="sequential warm calls for p50/p99")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of blocking throughput")
    parser.add_argument("--count", type=int, default=20000, help="non-blocking activations")
    parser.add_argument("--connections", type=int, default=32, help="connections for the non-blocking run")
    parser.add_argument("--sandboxes", type=int, default=8, help="warm sandboxes (and blocking connections)")
    parser.add_argument("--cold", type=int, default=0)
    parser.add_argument("--memory", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    isolations = [i.strip() for i in args.isolation.split(",") if i.strip()]
    for isolation in isolations:
        if isolation not in ("process", "docker"):
            parser.error(f"--isolation: unknown {isolation!r}; use process and/or docker")
    results = {}
    for isolation in isolations:
        results[isolation] = run_isolation(isolation, args)
    summary(results)
    print(f"loadavg at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (other processes share these cores)")
    if args.json:
        args.json.write_text(json.dumps({"format_version": FORMAT_VERSION, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
