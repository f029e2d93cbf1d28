"""Where an activation's time goes inside OpenWhisk 2.0.0 standalone, from its own log.

The standalone server logs every stage of an activation with its transaction id and a marker
``[marker:NAME:MS_SINCE_START(:DURATION_MS)]``. This reads ``standalone.log`` (``faasprof local
start --platform openwhisk`` writes it to ``<build>/run/standalone.log``), joins the lines of each
non-blocking activation by transaction id and prints, per window of ``--window-s`` seconds (by the
time the controller posted the activation), the medians and 90th percentiles of its stages:

* ``bus``: posted by the lean balancer → taken by the invoker (``invoker_activation_start``): the
  activation waits in the invoker's feed (its in-flight limit) or the balancer's in-memory topic;
* ``pool``: taken → ``/run`` sent (``invoker_activationRun_start``): the container pool finds, unpauses
  or creates a container (cold: ``docker run`` and ``/init`` inside this);
* ``run``: ``/run`` (``invoker_activationRun_finish``'s duration): the action in its container;
* ``logs``: the log store reading the container's log until the sentinel (``invoker_collectLogs``);
* the number of activations taken (``inv/s``), busy containers (activations between taken and logs
  collected, mean over the window) and the Docker CLI calls (``docker run``/``pause``/``unpause``)
  with their median durations.

    .venv/bin/python bench/openwhisk_stages.py ~/.cache/faasprof/openwhisk-standalone/run/standalone.log
    .venv/bin/python bench/openwhisk_stages.py LOG --since 2026-11-27T01:04:00 --window-s 5

Never passes or fails: a tool for faasprof/localwhisk/localwhisk-vs-openwhisk.md ("What holds OpenWhisk").
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

LINE = re.compile(r"^\[(?P<ts>[^\]]+)\] \[\w+\] \[(?P<tid>#tid_[^\]]+)\] (?P<rest>.*)$")
MARKER = re.compile(
    r"\[marker:(?P<name>[A-Za-z_.]+?)(?:_start|_finish|_error|_counter)?:(?P<at>\d+)(?::(?P<dur>\d+))?\]"
)
KINDS = {
    "posted": "controller_kafka_finish",
    "taken": "invoker_activation_start",
    "run_start": "invoker_activationRun_start",
    "run_finish": "invoker_activationRun_finish",
    "logs_finish": "invoker_collectLogs_finish",
}
DOCKER = ("invoker_docker.run_finish", "invoker_docker.pause_finish", "invoker_docker.unpause_finish")


def _epoch_s(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read(path: Path, since_s: float) -> tuple[dict[str, dict[str, float]], list[tuple[float, str, float]]]:
    """Per transaction id the time (epoch s) of each stage; and the Docker calls (end s, name, ms)."""
    stages: dict[str, dict[str, float]] = defaultdict(dict)
    docker: list[tuple[float, str, float]] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if "[marker:" not in line:
                continue
            match = LINE.match(line)
            if not match:
                continue
            at_s = _epoch_s(match["ts"])
            if at_s < since_s:
                continue
            rest = match["rest"]
            for kind, marker in KINDS.items():
                if f"[marker:{marker}:" in rest:
                    stages[match["tid"]][kind] = at_s
            for name in DOCKER:
                if f"[marker:{name}:" in rest:
                    found = MARKER.search(rest)
                    docker.append((at_s, name.split(".")[1].removesuffix("_finish"), float(found["dur"] or 0)))
    return stages, docker


def _q(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def _busy_mean(spans: list[tuple[float, float]], start_s: float, end_s: float) -> float:
    covered = sum(max(0.0, min(b, end_s) - max(a, start_s)) for a, b in spans)
    return covered / (end_s - start_s)


def report(stages: dict[str, dict[str, float]], docker: list[tuple[float, str, float]], window_s: float) -> list[str]:
    done = [s for s in stages.values() if all(k in s for k in KINDS)]
    if not done:
        return ["no complete activation in the log (non-blocking json_dumps calls after --since?)"]
    first_s = min(s["posted"] for s in done)
    spans = [(s["taken"], s["logs_finish"]) for s in done]
    out = [
        "window   posted/s  taken/s  busy   bus p50/p90 ms   pool p50/p90 ms   run p50/p90 ms   logs p50 ms   docker run/pause/unpause (n, p50 ms)"
    ]
    index = 0
    while True:
        start_s = first_s + index * window_s
        end_s = start_s + window_s
        inside = [s for s in done if start_s <= s["posted"] < end_s]
        if not inside and start_s > max(s["posted"] for s in done):
            break
        index += 1
        if not inside:
            continue
        taken = sum(1 for s in done if start_s <= s["taken"] < end_s)
        bus = [1000 * (s["taken"] - s["posted"]) for s in inside]
        pool = [1000 * (s["run_start"] - s["taken"]) for s in inside]
        run = [1000 * (s["run_finish"] - s["run_start"]) for s in inside]
        logs = [1000 * (s["logs_finish"] - s["run_finish"]) for s in inside]
        calls = []
        for name in ("run", "pause", "unpause"):
            ms = [d for at, n, d in docker if n == name and start_s <= at < end_s]
            calls.append(f"{len(ms)}/{statistics.median(ms):.0f}" if ms else "0/-")
        out.append(
            f"{start_s - first_s:6.0f}s {len(inside) / window_s:8.1f} {taken / window_s:8.1f} {_busy_mean(spans, start_s, end_s):5.1f}"
            f"   {_q(bus, 0.5):6.0f}/{_q(bus, 0.9):<7.0f}  {_q(pool, 0.5):6.0f}/{_q(pool, 0.9):<7.0f}"
            f"   {_q(run, 0.5):5.0f}/{_q(run, 0.9):<7.0f}  {_q(logs, 0.5):9.0f}     {'  '.join(calls)}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--since", help="UTC time (ISO), only activations after it")
    parser.add_argument("--window-s", type=float, default=5.0)
    args = parser.parse_args(argv)
    if not args.log.is_file():
        print(f"{args.log}: no such file", file=sys.stderr)
        return 2
    since_s = _epoch_s(args.since + ("" if args.since.endswith("Z") else "Z")) if args.since else 0.0
    stages, docker = read(args.log, since_s)
    print("\n".join(report(stages, docker, args.window_s)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
