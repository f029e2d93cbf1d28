"""Calibration benchmark: the same scenarios against any OpenWhisk-API platform, for comparing them.

Run it once per platform, then render the comparison table from the result files:

    .venv/bin/python bench/bench_calibration.py --apihost http://127.0.0.1:3233 --auth UUID:KEY \\
        --label "OpenWhisk 2.0.0 standalone" --out runs/calibration
    .venv/bin/python bench/bench_calibration.py --label "localwhisk (process)" --out runs/calibration
    .venv/bin/python bench/bench_calibration.py --table runs/calibration/*.json > table.md

Without ``--apihost`` it starts the embedded localwhisk (``--localwhisk KEY=VALUE`` passes its
settings; default user memory 4096 MB and pause grace 50 ms, as start.sh gives OpenWhisk).

Scenarios (``--only`` picks some):
  warm      a no-op Python action, sequential blocking calls: client latency, waitTime, duration,
            and the client's overhead beyond them (client − waitTime − duration);
  cold      fresh no-op actions, one blocking call each: client latency, waitTime, initTime;
  resume    a call after ``--idle-s`` of idleness (past the pause grace): client latency, waitTime;
  capacity  faasprof's capacity search for json_dumps (experiments.capacity): the highest
            balanced rate; each probe's latency mode is the paper's Figure 4 classification
            (under-invoked, balanced, over-invoked), and waitTime/duration at the top rates;
  throttle  bursts past the platform's own limits (concurrent, per minute) when they are low
            enough to reach: status codes and error text of the refusals;
  fields    the top-level keys and annotation keys of an activation record.

The host's 1-minute load average is recorded around every scenario: before it (the benchmark idle,
the platform up) and its peak during it. ``--quiet-below L`` waits, before each scenario, until the
load falls below L (at most ``--quiet-wait-s``); a scenario that started on a busier host is
marked "not quiet" in the result and the table, so a table measured on a shared host says so.

Result files carry ``format_version`` (``RESULT_FORMAT_VERSION``): 1: first version; 2: per-scenario
``host_load`` and the host's ``load_1m_before_max``/``load_1m_peak``. ``--table`` reads both.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import platform as host_platform
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faasprof import rundir  # noqa: E402
from faasprof.analyzer.analysis import load_summary  # noqa: E402
from faasprof.experiments.capacity import find_capacity  # noqa: E402
from faasprof.localwhisk.embedded import start_embedded  # noqa: E402
from faasprof.platforms.openwhisk.connection import Connection, normalise_apihost  # noqa: E402
from faasprof.progress import Progress  # noqa: E402

RESULT_FORMAT_VERSION = 2
READABLE_FORMAT_VERSIONS = (1, 2)
# In this order: throttle last, since it spends the per-minute budget the others need.
SCENARIOS = ("warm", "cold", "resume", "fields", "capacity", "throttle")
NOOP_PY = "def main(args):\n    return {'ok': True}\n"
SLEEP_PY = "import time\n\ndef main(args):\n    time.sleep(float(args.get('s', 2)))\n    return {'slept': True}\n"
REQUEST_TIMEOUT_S = 120.0
# A throttle scenario fires at most this many calls: past it the limit is "not reachable here".
THROTTLE_MAX_CALLS = 200


def pct(values, q: float) -> float | None:
    """The q-th percentile (nearest rank on the sorted values); None for no values."""
    values = sorted(v for v in values if v is not None and math.isfinite(v))
    if not values:
        return None
    k = min(len(values) - 1, max(0, int(round(q / 100.0 * (len(values) - 1)))))
    return float(values[k])


def summary_of(values) -> dict:
    """n, p50, p90, p99 and mean of the finite values."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    return {
        "n": len(finite),
        "p50": pct(finite, 50),
        "p90": pct(finite, 90),
        "p99": pct(finite, 99),
        "mean": sum(finite) / len(finite) if finite else None,
    }


def annotation(record: dict, key: str, default=None):
    for item in record.get("annotations") or []:
        if item.get("key") == key:
            return item.get("value")
    return default


class LoadWatch:
    """The host's 1-minute load average around each scenario: before it, and its peak during it.

    Sampled every ``interval_s`` by a thread; the clock, sleep and reader are parameters so a test
    can drive it without waiting.
    """

    def __init__(
        self, read=lambda: os.getloadavg()[0], clock=time.monotonic, sleep=time.sleep, interval_s: float = 1.0
    ):
        self._read, self._clock, self._sleep, self._interval_s = read, clock, sleep, interval_s
        self._peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wait_quiet(self, below: float | None, timeout_s: float) -> dict:
        """Wait until the load is below ``below`` (no wait when None); the load it started at."""
        started = self._clock()
        load = self._read()
        while below is not None and load >= below and self._clock() - started < timeout_s:
            self._sleep(min(5.0, self._interval_s * 5))
            load = self._read()
        entry = {"before_1m": round(load, 2), "waited_s": round(self._clock() - started, 1)}
        if below is not None:
            entry["quiet"] = load < below
        return entry

    def start(self) -> None:
        self._peak = self._read()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, name="load-watch", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._peak = max(self._peak, self._read())

    def stop(self) -> float:
        """The peak 1-minute load since start(); safe to call twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._peak = max(self._peak, self._read())
        return round(self._peak, 2)


class Api:
    """The few REST calls the scenarios need (actions, invocations, records) with one session."""

    def __init__(self, apihost: str, auth: str, namespace: str = "_"):
        self.apihost = normalise_apihost(apihost)
        self.base = f"{self.apihost}/api/v1/namespaces/{namespace}"
        self.session = requests.Session()
        self.session.auth = tuple(auth.split(":", 1))
        self.session.verify = False  # self-signed deployments; loopback in practice

    def info(self) -> dict:
        return self.session.get(self.apihost + "/", timeout=10).json()

    def put_action(self, name: str, code: str, memory_mb: int = 256) -> None:
        response = self.session.put(
            f"{self.base}/actions/{name}",
            params={"overwrite": "true"},
            timeout=REQUEST_TIMEOUT_S,
            json={"exec": {"kind": "python:3", "code": code}, "limits": {"memory": memory_mb}},
        )
        if response.status_code != 200:
            raise RuntimeError(f"PUT action {name}: {response.status_code} {response.text[:200]}")

    def delete_action(self, name: str) -> None:
        self.session.delete(f"{self.base}/actions/{name}", timeout=REQUEST_TIMEOUT_S)

    def invoke(self, name: str, params: dict | None = None, blocking: bool = True) -> tuple[float, requests.Response]:
        """(client latency in ms, response) of one invocation."""
        start_ns = time.perf_counter_ns()
        response = self.session.post(
            f"{self.base}/actions/{name}",
            params={"blocking": str(blocking).lower()},
            json=params or {},
            timeout=REQUEST_TIMEOUT_S,
        )
        return (time.perf_counter_ns() - start_ns) / 1e6, response

    def record(self, activation_id: str, attempts: int = 20) -> dict | None:
        for _ in range(attempts):
            response = self.session.get(f"{self.base}/activations/{activation_id}", timeout=10)
            if response.status_code == 200:
                return response.json()
            time.sleep(0.25)
        return None


def _timed_call(api: Api, name: str) -> dict:
    """One blocking call, as the client saw it and as the record says."""
    client_ms, response = api.invoke(name)
    row = {"status": response.status_code, "client_ms": client_ms}
    try:
        record = response.json()
    except ValueError:
        record = {}
    if response.status_code == 200 and isinstance(record, dict):
        wait = annotation(record, "waitTime")
        init = annotation(record, "initTime")
        row.update(
            wait_ms=float(wait) if wait is not None else None,
            init_ms=float(init) if init is not None else None,
            duration_ms=float(record.get("duration")) if record.get("duration") is not None else None,
            container_state=annotation(record, "containerState"),
        )
        if row["wait_ms"] is not None and row["duration_ms"] is not None:
            row["overhead_ms"] = client_ms - row["wait_ms"] - row["duration_ms"]
    return row


def _rows_summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if r["status"] == 200]
    return {
        "calls": len(rows),
        "ok": len(ok),
        "with_init": sum(1 for r in ok if r.get("init_ms") is not None),
        **{
            f"{key}": summary_of(r.get(key) for r in ok)
            for key in ("client_ms", "wait_ms", "init_ms", "duration_ms", "overhead_ms")
        },
    }


def scenario_warm(api: Api, prefix: str, calls: int) -> dict:
    name = f"{prefix}-noop"
    api.put_action(name, NOOP_PY)
    for _ in range(5):  # the first is cold; the rest let the runtime settle
        _timed_call(api, name)
    rows = [_timed_call(api, name) for _ in range(calls)]
    return _rows_summary(rows)


def scenario_cold(api: Api, prefix: str, calls: int) -> dict:
    rows = []
    for index in range(calls):
        name = f"{prefix}-cold{index}"
        api.put_action(name, NOOP_PY)
        rows.append(_timed_call(api, name))
        api.delete_action(name)
    return _rows_summary(rows)


def scenario_resume(api: Api, prefix: str, calls: int, idle_s: float) -> dict:
    name = f"{prefix}-noop"
    api.put_action(name, NOOP_PY)
    _timed_call(api, name)
    rows = []
    for _ in range(calls):
        time.sleep(idle_s)
        rows.append(_timed_call(api, name))
    result = _rows_summary(rows)
    result["idle_s"] = idle_s
    return result


def _burst(api: Api, name: str, count: int, params: dict, workers: int) -> list[requests.Response]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(api.invoke, name, params, False) for _ in range(count)]
        return [future.result()[1] for future in futures]


def _refusals(responses: list[requests.Response]) -> dict:
    codes: dict[str, int] = {}
    texts: list[str] = []
    for response in responses:
        codes[str(response.status_code)] = codes.get(str(response.status_code), 0) + 1
        if response.status_code >= 400:
            try:
                text = str(response.json().get("error"))
            except (ValueError, AttributeError):
                text = response.text[:200]
            if text not in texts:
                texts.append(text)
    return {"status_codes": codes, "errors": texts[:3]}


def scenario_throttle(api: Api, prefix: str, limits: dict) -> dict:
    """Refusals past the concurrent and per-minute limits, when they are within reach."""
    result: dict = {"limits": {k: limits.get(k) for k in ("concurrent_actions", "actions_per_minute")}}
    concurrent_limit = int(limits.get("concurrent_actions") or 0)
    if 0 < concurrent_limit and concurrent_limit + 5 <= THROTTLE_MAX_CALLS:
        name = f"{prefix}-sleep"
        api.put_action(name, SLEEP_PY)
        responses = _burst(api, name, concurrent_limit + 5, {"s": 3}, workers=min(32, concurrent_limit + 5))
        result["concurrent"] = {"calls": concurrent_limit + 5, **_refusals(responses)}
        time.sleep(8.0)  # the sleepers finish (cold starts included) before the next burst counts against the limit
    else:
        result["concurrent"] = {"note": f"limit {concurrent_limit} not reachable within {THROTTLE_MAX_CALLS} calls"}
    per_minute = int(limits.get("actions_per_minute") or 0)
    if 0 < per_minute and per_minute + 5 <= THROTTLE_MAX_CALLS:
        name = f"{prefix}-noop"
        api.put_action(name, NOOP_PY)
        # Blocking, one at a time: at most one in flight, so only the per-minute limit can refuse.
        responses = [api.invoke(name, {}, True)[1] for _ in range(per_minute + 5)]
        first_refused = next((k for k, r in enumerate(responses) if r.status_code == 429), None)
        result["per_minute"] = {
            "calls": per_minute + 5,
            "first_refused_call": first_refused,
            **_refusals(responses),
            "retry_after": next((r.headers.get("Retry-After") for r in responses if r.status_code == 429), None),
        }
    else:
        result["per_minute"] = {"note": f"limit {per_minute} not reachable within {THROTTLE_MAX_CALLS} calls"}
    return result


def scenario_fields(api: Api, prefix: str) -> dict:
    name = f"{prefix}-noop"
    api.put_action(name, NOOP_PY)
    _, response = api.invoke(name)
    body = response.json()
    if response.status_code != 200:
        return {"error": f"{response.status_code}: {str(body)[:200]}"}
    record = api.record(body["activationId"]) or {}
    return {
        "response_keys": sorted(body),
        "record_keys": sorted(record),
        "annotation_keys": sorted(a.get("key") for a in record.get("annotations") or []),
        "response_keys_of_nonblocking": sorted(api.invoke(name, {}, False)[1].json()),
    }


def _phase_of(run_dir: str) -> dict:
    summary = load_summary(Path(run_dir))
    phases = [p for i in summary["instances"] for p in i["phases"]]
    return phases[-1] if phases else {}


def _pick(phase: dict, *names: str):
    for name in names:
        if phase.get(name) is not None:
            return phase[name]
    return None


def scenario_capacity(connection: Connection, out_dir: Path, duration_s: float, max_runs: int) -> dict:
    result = find_capacity(
        "json_dumps",
        out_dir=out_dir,
        duration_s=duration_s,
        connection=connection,
        start_rate=1.0,
        factor=2.0,
        tolerance=0.15,
        max_runs=max_runs,
        cooldown_s=2.0,
        progress=Progress.to(sys.stderr),
    )
    probes = []
    for probe in result.get("probes") or []:
        phase = _phase_of(probe["run_dir"]) if probe.get("run_dir") else {}
        probes.append(
            {
                "rate_rps": probe["rate_rps"],
                "mode": probe["mode"],
                "achieved_rps": probe.get("achieved_rps"),
                "client_p50_ms": probe.get("p50_ms"),
                "cold_fraction": probe.get("cold_fraction"),
                "resumed_fraction": probe.get("resumed_fraction"),
                "wait_p50_ms": _pick(phase, "wait_ms_p50", "wait_time_ms_p50"),
                "duration_p50_ms": _pick(phase, "duration_ms_p50"),
                "run_dir": probe.get("run_dir"),
            }
        )
    return {
        "capacity_rps": result.get("capacity_rps"),
        "probes": probes,
        "result_file": result.get("result_file"),
        "stopped": result.get("stopped") or result.get("reason"),
    }


def run_all(
    api: Api, connection: Connection, scenarios: list[str], args, out_dir: Path, say, watch: LoadWatch | None = None
) -> dict:
    info = api.info()
    prefix = f"cal{uuid.uuid4().hex[:6]}"
    watch = watch or LoadWatch()
    results: dict = {}
    for scenario in scenarios:
        if args.quiet_below is not None:
            say(
                f"bench_calibration: {scenario}: waiting for the 1-minute load to fall below {args.quiet_below:g} (at most {args.quiet_wait_s:g} s)"
            )
        host_load = watch.wait_quiet(args.quiet_below, args.quiet_wait_s)
        if host_load.get("quiet") is False:
            say(
                f"bench_calibration: warning: {scenario} starts on a busy host (1-minute load {host_load['before_1m']:g} after {host_load['waited_s']:g} s); "
                "it is marked 'not quiet' in the result: stop what else runs here and measure again"
            )
        say(f"bench_calibration: {scenario} (1-minute load {host_load['before_1m']:g})")
        watch.start()
        started = time.monotonic()
        if scenario == "warm":
            results[scenario] = scenario_warm(api, prefix, args.warm)
        elif scenario == "cold":
            results[scenario] = scenario_cold(api, prefix, args.cold)
        elif scenario == "resume":
            results[scenario] = scenario_resume(api, prefix, args.resume, args.idle_s)
        elif scenario == "throttle":
            results[scenario] = scenario_throttle(api, prefix, info.get("limits") or {})
        elif scenario == "fields":
            results[scenario] = scenario_fields(api, prefix)
        elif scenario == "capacity":
            results[scenario] = scenario_capacity(connection, out_dir, args.capacity_duration, args.capacity_runs)
        results[scenario]["elapsed_s"] = round(time.monotonic() - started, 1)
        results[scenario]["host_load"] = {**host_load, "peak_1m": watch.stop()}
    return {"platform_info": info, "scenarios": results}


def host_load_summary(scenarios: dict, quiet_below: float | None) -> dict:
    """The host's load over a whole result: the busiest start of a scenario, the peak during one."""
    loads = [s["host_load"] for s in scenarios.values() if isinstance(s, dict) and "host_load" in s]
    summary: dict = {
        "load_1m_before_max": max((entry["before_1m"] for entry in loads), default=None),
        "load_1m_peak": max((entry["peak_1m"] for entry in loads), default=None),
    }
    if quiet_below is not None:
        summary["quiet_below"] = quiet_below
        summary["not_quiet"] = [
            name
            for name, s in scenarios.items()
            if isinstance(s, dict) and (s.get("host_load") or {}).get("quiet") is False
        ]
    return summary


# -- the table ----------------------------------------------------------------------------------


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:.0f}"
    return str(value)


def table_rows(results: list[dict]) -> list[tuple[str, list[str]]]:
    """(row label, one cell per platform) of the comparison table."""

    def get(result, *path):
        node = result
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    rows: list[tuple[str, list[str]]] = []

    def add(label, *path, digits=3):
        rows.append((label, [_fmt(get(r, *path), digits) for r in results]))

    rows.append(
        (
            "measured (UTC) / host load, 1 min",
            [f"{(r.get('measured_utc') or '–')[:16]} / {_load_cell(r)}" for r in results],
        )
    )
    rows.append(
        (
            "pause grace / user memory",
            [
                f"{_fmt(get(r, 'settings', 'pause_grace_ms'))} ms / {_fmt(get(r, 'settings', 'user_memory_mb'))} MB"
                for r in results
            ],
        )
    )
    for scenario, label in (("warm", "warm"), ("cold", "cold"), ("resume", "resume after pause")):
        for key, name in (
            ("client_ms", "client"),
            ("wait_ms", "waitTime"),
            ("init_ms", "initTime"),
            ("duration_ms", "duration"),
            ("overhead_ms", "client − wait − duration"),
        ):
            if scenario == "warm" and key == "init_ms":
                continue
            if scenario != "warm" and key in ("duration_ms", "overhead_ms"):
                continue
            add(f"{label}: {name} p50 (ms)", "scenarios", scenario, key, "p50")
        if scenario == "warm":
            add("warm: client p99 (ms)", "scenarios", "warm", "client_ms", "p99")
        if scenario == "resume":
            add("resume: calls with initTime (of n)", "scenarios", "resume", "with_init")
    add("json_dumps capacity (req/s, balanced)", "scenarios", "capacity", "capacity_rps")
    rows.append(
        (
            "Figure 4 modes (rate/s → mode)",
            [
                ", ".join(f"{p['rate_rps']:.3g}→{p['mode']}" for p in (get(r, "scenarios", "capacity", "probes") or []))
                or "–"
                for r in results
            ],
        )
    )
    rows.append(("top probe kept up: waitTime / duration p50 (ms)", [_top_probe(r) for r in results]))
    for kind in ("concurrent", "per_minute"):
        rows.append((f"throttle {kind.replace('_', ' ')}: limit → answers", [_throttle_cell(r, kind) for r in results]))
    rows.append(
        (
            "record annotation keys",
            [", ".join(get(r, "scenarios", "fields", "annotation_keys") or []) or "–" for r in results],
        )
    )
    return rows


def _load_cell(result: dict) -> str:
    """Version 1: the load at the end; version 2: the busiest start of a scenario and the peak during one."""
    host = result.get("host") or {}
    if "load_1m_before_max" not in host:
        return f"{_fmt(host.get('load_1m'), 2)} at the end"
    cell = f"≤ {_fmt(host.get('load_1m_before_max'), 2)} before each scenario, peak {_fmt(host.get('load_1m_peak'), 2)} during"
    if host.get("not_quiet"):
        cell += f" (not quiet: {', '.join(host['not_quiet'])})"
    return cell


def load_result(path: Path) -> dict:
    """A result file; ValueError (naming the file and the fix) for a version this script cannot read."""
    result = json.loads(path.read_text())
    version = result.get("format_version") if isinstance(result, dict) else None
    if version not in READABLE_FORMAT_VERSIONS:
        raise ValueError(
            f"{path}: format_version {version!r} is not one this script reads ({', '.join(map(str, READABLE_FORMAT_VERSIONS))}); "
            "measure again with this checkout's bench_calibration.py"
        )
    return result


def _top_probe(result: dict) -> str:
    probes = ((result.get("scenarios") or {}).get("capacity") or {}).get("probes") or []
    kept = [p for p in probes if p["mode"] in ("balanced", "under-invoked")]
    if not kept:
        return "–"
    top = max(kept, key=lambda p: p["rate_rps"])
    return f"{_fmt(top.get('wait_p50_ms'))} / {_fmt(top.get('duration_p50_ms'))} at {top['rate_rps']:.3g}/s"


def _throttle_cell(result: dict, kind: str) -> str:
    throttle = (result.get("scenarios") or {}).get("throttle") or {}
    part = throttle.get(kind) or {}
    limit = (throttle.get("limits") or {}).get("concurrent_actions" if kind == "concurrent" else "actions_per_minute")
    if not part:
        return "–"
    if "note" in part:
        return f"{_fmt(limit)}: not exercised"
    codes = ", ".join(f"{code}×{count}" for code, count in sorted(part.get("status_codes", {}).items()))
    error = (part.get("errors") or [""])[0]
    return f"{_fmt(limit)}: {codes}" + (f" ({error[:60]})" if error else "")


def render_table(results: list[dict]) -> str:
    """The markdown comparison table of several result files (one column per platform)."""
    header = "| | " + " | ".join(r.get("label", "?") for r in results) + " |"
    lines = [header, "|---|" + "---|" * len(results)]
    for label, cells in table_rows(results):
        lines.append(f"| {label} | " + " | ".join(cell.replace("|", "/") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


# -- command line ----------------------------------------------------------------------------------


def _parse_settings(pairs: list[str]) -> dict:
    settings: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"bench_calibration: --localwhisk {pair!r}: want KEY=VALUE")
        try:
            settings[key] = json.loads(value)
        except ValueError:
            settings[key] = value
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apihost", help="the platform (default: start the embedded localwhisk)")
    parser.add_argument("--auth", help="UUID:KEY of the platform")
    parser.add_argument("--namespace", default="_")
    parser.add_argument("--label", help="column title in the table (default: the platform kind)")
    parser.add_argument(
        "--pause-grace",
        type=float,
        metavar="MS",
        help="the platform's pause grace, recorded in the result (OpenWhisk: as started)",
    )
    parser.add_argument(
        "--user-memory", type=int, metavar="MB", help="the platform's user memory, recorded in the result"
    )
    parser.add_argument(
        "--localwhisk",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="embedded localwhisk setting (repeatable)",
    )
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, help="run only these scenarios")
    parser.add_argument("--warm", type=int, default=100, help="warm calls (default 100)")
    parser.add_argument("--cold", type=int, default=5, help="cold starts (default 5)")
    parser.add_argument("--resume", type=int, default=8, help="calls after idleness (default 8)")
    parser.add_argument(
        "--idle-s", type=float, default=1.0, help="idleness before each resume call (default 1 s: past a 50 ms grace)"
    )
    parser.add_argument(
        "--capacity-duration", type=float, default=8.0, metavar="S", help="length of each capacity probe (default 8)"
    )
    parser.add_argument("--capacity-runs", type=int, default=8, help="at most this many capacity probes (default 8)")
    parser.add_argument(
        "--quiet-below",
        type=float,
        metavar="LOAD",
        help="before each scenario, wait until the 1-minute load average is below LOAD",
    )
    parser.add_argument(
        "--quiet-wait-s",
        type=float,
        default=600.0,
        metavar="S",
        help="the longest wait for --quiet-below (default 600 s); past it the scenario runs, marked not quiet",
    )
    parser.add_argument(
        "--out", default="runs/calibration", help="where results and probe runs go (default runs/calibration)"
    )
    parser.add_argument(
        "--table", nargs="+", metavar="RESULT", help="render the markdown table of these result files and exit"
    )
    args = parser.parse_args(argv)

    if args.table:
        try:
            results = [load_result(Path(path)) for path in args.table]
        except (OSError, ValueError) as error:
            print(f"bench_calibration: {error}", file=sys.stderr)
            return 2
        sys.stdout.write(render_table(results))
        return 0
    if bool(args.apihost) != bool(args.auth):
        parser.error("--apihost and --auth go together")
    if args.quiet_below is not None and not args.quiet_below > 0:
        parser.error(f"--quiet-below: a load average > 0, such as 1 (got {args.quiet_below:g})")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    scenarios = [s for s in SCENARIOS if s in (args.only or SCENARIOS)]
    handle = None
    settings: dict = {}
    try:
        if args.apihost:
            connection = Connection(
                apihost=normalise_apihost(args.apihost),
                auth=args.auth,
                namespace=args.namespace,
                source="flags",
                settings={
                    k: v
                    for k, v in (("pause_grace_ms", args.pause_grace), ("user_memory_mb", args.user_memory))
                    if v is not None
                },
            )
        else:
            local = {"user_memory_mb": 4096, "pause_grace_ms": 50, **_parse_settings(args.localwhisk)}
            handle = start_embedded(log_dir=Path(tempfile.mkdtemp(prefix="bench-calibration-")), **local)
            connection = Connection(
                apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded"
            )
        api = Api(connection.apihost, connection.auth, connection.namespace)
        measured = run_all(api, connection, scenarios, args, out_dir, say)
        info = measured["platform_info"]
        if handle is not None:
            settings = (
                dict(handle.settings) if getattr(handle, "settings", None) else dict(info.get("localwhisk") or {})
            )
        else:
            settings = dict(connection.settings)
    finally:
        if handle is not None:
            handle.stop()
    kind = "localwhisk" if "localwhisk" in info else "openwhisk"
    result = {
        "format_version": RESULT_FORMAT_VERSION,
        "label": args.label or kind,
        "kind": kind,
        "apihost": connection.apihost,
        "measured_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {
            "hostname": host_platform.node(),
            "cpus": os.cpu_count(),
            "kernel": host_platform.release(),
            "load_1m": os.getloadavg()[0],
            **host_load_summary(measured["scenarios"], args.quiet_below),
        },
        "settings": {
            k: settings.get(k)
            for k in (
                "pause_grace_ms",
                "user_memory_mb",
                "isolation",
                "control_plane",
                "invokes_per_minute",
                "concurrent_invokes",
            )
            if k in settings
        },
        **measured,
    }
    path = out_dir / f"calibration-{rundir.safe_name(result['label'])}-{rundir.utc_stamp()}.json"
    rundir.write_json_atomic(path, result)
    print(render_table([result]), end="")
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
