"""Process sandboxes against Docker containers in localwhisk: print one table (no pass/fail).

Per isolation (``auto`` = processes in cgroups where writable, ``docker`` = one container per
sandbox paused with docker pause, ``docker-freezer`` = the same paused by a direct freezer write), through the REST API with real clients:
  - cold start of a no-op Python action: client latency, waitTime, initTime (a new action each time);
  - warm latency (back-to-back calls inside the pause grace);
  - resume after pause: client latency and waitTime of a call to a paused sandbox;
  - idle memory per sandbox (the sandbox's memory cgroup, paused);
  - the three latency modes of the paper's Figure 4: a 50 ms function on a one-slot pool driven
    open-loop under (8/s), near (80 % of capacity) and over (2x) its capacity: median waitTime and
    whether waits grow over the run;
  - with ``--capacity``: ``faasprof capacity json_dumps`` against ``faasprof local start --isolation X``.
And the Docker mechanisms themselves: ``docker pause``/``unpause`` through the CLI, through the
Engine API, and a direct cgroup freezer write; container start through the CLI and the API.

Usage: .venv/bin/python bench/bench_isolation.py [--cold N] [--warm N] [--resume N] [--mode-s S] [--capacity] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faasprof.docker import DEFAULT_IMAGES, docker_problem  # noqa: E402
from faasprof.localwhisk.config import GUEST_AUTH  # noqa: E402
from faasprof.localwhisk.docker_sandbox import Engine
from faasprof.localwhisk.embedded import start_embedded  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOOP_PY = "def main(args):\n    return {}\n"
WORK_PY = "import time\ndef main(args):\n    time.sleep(0.05)\n    return {'i': args.get('i')}\n"
LABEL = "faasprof.bench=isolation"


def annotation(record, key, default=None):
    for item in record.get("annotations", []):
        if item["key"] == key:
            return item["value"]
    return default


def med(values):
    return statistics.median(values) if values else float("nan")


class Client:
    def __init__(self, handle):
        self.handle = handle
        self.base = handle.apihost + "/api/v1/namespaces/_"
        self.session = requests.Session()
        self.session.auth = tuple(handle.auth.split(":", 1))

    def put(self, name, code, memory=256):
        body = {"exec": {"kind": "python:3", "code": code}, "limits": {"memory": memory, "timeout": 60000}}
        self.session.put(f"{self.base}/actions/{name}?overwrite=true", json=body, timeout=30).raise_for_status()

    def invoke(self, name, params=None):
        t0 = time.perf_counter()
        response = self.session.post(f"{self.base}/actions/{name}?blocking=true", json=params or {}, timeout=120)
        latency_ms = (time.perf_counter() - t0) * 1000
        return latency_ms, response.json()

    def pool(self):
        return self.session.get(self.handle.apihost + "/localwhisk/v1/pool", timeout=10).json()["pool"]

    def fetch(self, ids, timeout_s=120.0):
        records, deadline = [], time.monotonic() + timeout_s
        for activation_id in ids:
            while True:
                response = self.session.get(f"{self.base}/activations/{activation_id}", timeout=10)
                if response.status_code == 200:
                    records.append(response.json())
                    break
                if time.monotonic() > deadline:
                    raise SystemExit("records did not arrive")
                time.sleep(0.05)
        return records


def wait_until(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def lw_settings(isolation):
    """``docker-freezer`` = isolation docker with the direct freezer pause."""
    if isolation == "docker-freezer":
        return {"isolation": "docker", "docker_pause": "freezer"}
    return {"isolation": isolation}


def measure_basics(isolation, args, out):
    with start_embedded(**lw_settings(isolation), pause_grace_ms=50, idle_timeout_s=600, user_memory_mb=4096) as handle:
        c = Client(handle)
        out["isolation_reported"] = handle.settings["isolation"]
        cold = []
        for i in range(args.cold):
            c.put(f"cold{i}", NOOP_PY)
            latency, record = c.invoke(f"cold{i}")
            assert annotation(record, "containerState") == "cold", record
            cold.append((latency, annotation(record, "waitTime"), annotation(record, "initTime"), record["duration"]))
        out["cold_client_ms"] = med([x[0] for x in cold])
        out["cold_wait_ms"] = med([x[1] for x in cold])
        out["cold_init_ms"] = med([x[2] for x in cold])
        out["cold_duration_ms"] = med([x[3] for x in cold])
        # Idle memory: the cold sandboxes are paused now.
        wait_until(lambda: all(sb["state"] == "paused" for sb in c.pool()["sandboxes"]), 10)
        usage = [sb["memory_usage_bytes"] for sb in c.pool()["sandboxes"] if sb["memory_usage_bytes"]]
        out["idle_memory_mb"] = med(usage) / 2**20 if usage else float("nan")

        c.put("warm", NOOP_PY)
        c.invoke("warm")
        warm, exec_ms = [], []
        for _ in range(args.warm):
            latency, record = c.invoke("warm")
            if annotation(record, "containerState") == "warm":
                warm.append(latency)
                exec_ms.append(record["duration"])
        out["warm_client_ms"] = med(warm)
        out["warm_duration_ms"] = med(exec_ms)

        resumed, resumed_wait = [], []
        for _ in range(args.resume):
            time.sleep(0.4)  # > pause grace: the sandbox is paused
            latency, record = c.invoke("warm")
            if annotation(record, "containerState") == "resumed":
                resumed.append(latency)
                resumed_wait.append(annotation(record, "waitTime"))
        out["resume_client_ms"] = med(resumed)
        out["resume_wait_ms"] = med(resumed_wait)


def drive(c, action, rate_per_s, duration_s):
    ids, t0 = [], time.monotonic()
    for i in range(int(rate_per_s * duration_s)):
        delay = t0 + i / rate_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        response = c.session.post(f"{c.base}/actions/{action}?blocking=false", json={"i": i}, timeout=30)
        ids.append(response.json()["activationId"])
    return c.fetch(ids)


def measure_modes(isolation, args, out):
    """Figure 4: under-, balanced and over-invoked, one 256 MB slot, a 50 ms function."""
    with start_embedded(**lw_settings(isolation), pause_grace_ms=50, idle_timeout_s=600, user_memory_mb=256) as handle:
        c = Client(handle)
        c.put("work", WORK_PY)
        c.invoke("work")
        # Capacity of the slot: 1 / (warm duration + per-call overhead), from 10 back-to-back calls.
        t0 = time.perf_counter()
        for _ in range(10):
            c.invoke("work")
        capacity = 10 / (time.perf_counter() - t0)
        out["fig4_capacity_per_s"] = capacity
        for mode, rate in (("under", 8.0), ("balanced", 0.8 * capacity), ("over", 2.0 * capacity)):
            time.sleep(1.0)
            records = drive(c, "work", rate, args.mode_s)
            waits = [annotation(r, "waitTime") or 0 for r in records]
            states = [annotation(r, "containerState") for r in records]
            quarter = max(len(waits) // 4, 1)
            out[f"fig4_{mode}_rate"] = rate
            out[f"fig4_{mode}_wait_ms"] = med(waits)
            out[f"fig4_{mode}_wait_first_last_ms"] = (med(waits[:quarter]), med(waits[-quarter:]))
            out[f"fig4_{mode}_resumed_share"] = states.count("resumed") / len(states)


def measure_capacity(isolation, out):
    data_dir = Path(tempfile.mkdtemp(prefix="bench-iso-"))
    flags = [arg for key, value in lw_settings(isolation).items() for arg in ("--" + key.replace("_", "-"), value)]
    start = subprocess.run(
        [sys.executable, "-m", "faasprof", "local", "start", *flags, "--port", "0", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if start.returncode != 0:
        out["capacity_per_s"] = f"local start failed: {start.stderr.strip()[-200:]}"
        return
    apihost = start.stdout.strip().splitlines()[-1]
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "faasprof",
                "capacity",
                "json_dumps",
                "--apihost",
                apihost,
                "--auth",
                GUEST_AUTH,
                "--duration",
                "5",
                "--max-runs",
                "8",
                "--quiet",
                "--out",
                str(data_dir / "runs"),
            ],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
        )
        text = run.stdout + run.stderr
        found = re.search(r"capacity ([0-9.e+]+)/s", text)
        out["capacity_per_s"] = float(found.group(1)) if found else text.strip()[-200:]
        out["capacity_output"] = text.strip()[-400:]
    finally:
        subprocess.run(
            [sys.executable, "-m", "faasprof", "local", "stop", "--data-dir", str(data_dir)],
            capture_output=True,
            timeout=60,
        )


def measure_mechanisms(n, out):
    """docker pause/unpause: CLI vs Engine API (aiohttp, as localwhisk) vs a freezer write."""
    import asyncio

    cid = subprocess.run(
        ["docker", "run", "-d", "--label", LABEL, DEFAULT_IMAGES["python"]], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        cli = {"pause": [], "unpause": []}
        cli_failed = 0
        for _ in range(n):
            for verb in ("pause", "unpause"):
                t0 = time.perf_counter()
                if subprocess.run(["docker", verb, cid], capture_output=True).returncode != 0:
                    cli_failed += 1
                    continue
                cli[verb].append((time.perf_counter() - t0) * 1000)

        async def api_loop():
            engine = Engine()
            times = {"pause": [], "unpause": [], "create+start": [], "failed": 0}
            try:
                for _ in range(n):
                    for verb in ("pause", "unpause"):
                        t0 = time.perf_counter()
                        try:
                            await engine.call("POST", f"/containers/{cid}/{verb}", ok=(200, 204, 409))
                        except OSError:  # runc "unable to freeze" happens under heavy load: counted
                            times["failed"] += 1
                            continue
                        times[verb].append((time.perf_counter() - t0) * 1000)
                for _ in range(max(n // 4, 3)):
                    t0 = time.perf_counter()
                    created = await engine.call(
                        "POST",
                        "/containers/create",
                        body={"Image": DEFAULT_IMAGES["python"], "Labels": {"faasprof.bench": "isolation"}},
                    )
                    await engine.call("POST", f"/containers/{created['Id']}/start")
                    times["create+start"].append((time.perf_counter() - t0) * 1000)
                    await engine.call("DELETE", f"/containers/{created['Id']}", params={"force": "1"})
            finally:
                await engine.close()
            return times

        api = asyncio.run(api_loop())
        freezer = Path(f"/sys/fs/cgroup/freezer/docker/{cid}/freezer.state")
        frz = {"pause": [], "unpause": []}
        if freezer.exists():
            for _ in range(n):
                for verb, state in (("pause", "FROZEN"), ("unpause", "THAWED")):
                    t0 = time.perf_counter()
                    freezer.write_text(state)
                    limit = time.monotonic() + 2
                    while freezer.read_text().strip() != state and time.monotonic() < limit:
                        pass
                    frz[verb].append((time.perf_counter() - t0) * 1000)
        run_cli = []
        for _ in range(max(n // 4, 3)):
            t0 = time.perf_counter()
            other = subprocess.run(
                ["docker", "run", "-d", "--label", LABEL, DEFAULT_IMAGES["python"]],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            run_cli.append((time.perf_counter() - t0) * 1000)
            subprocess.run(["docker", "rm", "-f", other], capture_output=True)
        out["mech"] = {
            "pause_cli_ms": med(cli["pause"]),
            "unpause_cli_ms": med(cli["unpause"]),
            "pause_api_ms": med(api["pause"]),
            "unpause_api_ms": med(api["unpause"]),
            "pause_freezer_ms": med(frz["pause"]),
            "unpause_freezer_ms": med(frz["unpause"]),
            "run_cli_ms": med(run_cli),
            "create_start_api_ms": med(api["create+start"]),
            "failed_pause_unpause": cli_failed + api["failed"],
        }
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


def fmt(value, digits=1):
    if isinstance(value, tuple):
        return " → ".join(fmt(v, 0) for v in value)
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.{digits}f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--resume", type=int, default=8)
    parser.add_argument("--mode-s", type=float, default=5.0, help="seconds per Figure 4 mode (default 5)")
    parser.add_argument(
        "--mechanisms", type=int, default=20, help="repetitions of pause/unpause per mechanism (0 = skip)"
    )
    parser.add_argument(
        "--capacity", action="store_true", help="also run faasprof capacity json_dumps per isolation (minutes)"
    )
    parser.add_argument(
        "--isolations",
        default="auto,docker,docker-freezer",
        help="columns: auto, cgroup, rlimit, docker, docker-freezer",
    )
    parser.add_argument("--mechanisms-only", action="store_true", help="only the docker pause/unpause/start mechanisms")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    problem = docker_problem()
    isolations = [i for i in args.isolations.split(",") if i]
    if problem:
        for name in [i for i in isolations if i.startswith("docker")]:
            print(f"{name} skipped: {problem}", file=sys.stderr)
            isolations.remove(name)
    results = {}
    if args.mechanisms_only:
        isolations = [i for i in isolations if i.startswith("docker")][:1]
        holder = {}
        if isolations:
            measure_mechanisms(args.mechanisms, holder)
            print("docker mechanisms (ms, median):  " + ", ".join(f"{k} {fmt(v)}" for k, v in holder["mech"].items()))
        return 0
    for isolation in isolations:
        out = results.setdefault(isolation, {})
        print(f"[{isolation}] basics ...", file=sys.stderr)
        measure_basics(isolation, args, out)
        print(f"[{isolation}] Figure 4 modes ...", file=sys.stderr)
        measure_modes(isolation, args, out)
        if args.capacity:
            print(f"[{isolation}] capacity json_dumps ...", file=sys.stderr)
            measure_capacity(isolation, out)
    rows = [
        ("isolation (as reported)", "isolation_reported"),
        ("cold start, client latency ms (median)", "cold_client_ms"),
        ("cold start, waitTime ms", "cold_wait_ms"),
        ("cold start, initTime ms", "cold_init_ms"),
        ("warm, client latency ms", "warm_client_ms"),
        ("warm, execution (duration) ms", "warm_duration_ms"),
        ("resume after pause, client latency ms", "resume_client_ms"),
        ("resume after pause, waitTime ms", "resume_wait_ms"),
        ("idle memory per sandbox MB (paused)", "idle_memory_mb"),
        ("Fig 4 slot capacity (50 ms fn) /s", "fig4_capacity_per_s"),
        ("Fig 4 under (8/s): waitTime ms", "fig4_under_wait_ms"),
        ("Fig 4 under: share resumed", "fig4_under_resumed_share"),
        ("Fig 4 balanced (0.8x): waitTime ms", "fig4_balanced_wait_ms"),
        ("Fig 4 over (2x): waitTime first→last quarter ms", "fig4_over_wait_first_last_ms"),
    ]
    if args.capacity:
        rows.append(("faasprof capacity json_dumps /s", "capacity_per_s"))
    width = max(len(label) for label, _ in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{i:>12}" for i in isolations))
    for label, key in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{fmt(results[i].get(key, float('nan'))):>12}" for i in isolations))
    sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(
            json.dumps({"isolations": results, "host_cpus": os.cpu_count()}, indent=1, default=str)
        )
    mech = {}
    if any(i.startswith("docker") for i in isolations) and args.mechanisms:
        holder = {}
        measure_mechanisms(args.mechanisms, holder)
        mech = holder["mech"]
    if mech:
        print()
        print("docker mechanisms (ms, median):  " + ", ".join(f"{k} {fmt(v)}" for k, v in mech.items()))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"isolations": results, "mechanisms": mech, "host_cpus": os.cpu_count()}, indent=1, default=str)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
