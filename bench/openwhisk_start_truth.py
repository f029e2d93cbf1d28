"""Each activation's start class as OpenWhisk 2.0.0 standalone's own log tells it, beside its record.

The container pool logs ``containerStart containerState: cold|warmed ... activationId: ID`` under
the activation's transaction id, and the Docker client ``invoker_docker.unpause`` under the same id
when it had to unpause the container first. This joins both with the run directories' records
(``activations.jsonl``) and writes one CSV row per activation: ``run, activation_id, start_ms,
end_ms, wait_ms, init_ms`` from the record and ``log_class`` (cold, resumed or warm) from the log,
the sample tests/data/openwhisk/ keeps to check the analyzer's inferred start classes against:

    .venv/bin/python bench/openwhisk_start_truth.py ~/.cache/faasprof/openwhisk-standalone/run/standalone.log \\
        RUN_DIR... > tests/data/openwhisk/start_classes.csv

Never passes or fails: a tool for the analyzer's start-class rule (faasprof.analyzer.frames).
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\[[^\]]+\] \[\w+\] \[(?P<tid>#tid_[^\]]+)\] (?P<rest>.*)$")
CONTAINER_START = re.compile(r"containerStart containerState: (?P<state>\w+).*activationId: (?P<id>[0-9a-f]{32})")


def log_classes(log: Path) -> dict[str, str]:
    """Activation id → cold (a new container), resumed (an unpause under its transaction) or warm."""
    state_by_tid: dict[str, tuple[str, str]] = {}
    unpauses: dict[str, int] = defaultdict(int)
    with log.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            match = LINE.match(line)
            if not match:
                continue
            started = CONTAINER_START.search(match["rest"])
            if started:
                state_by_tid[match["tid"]] = (started["id"], started["state"])
            elif "invoker_docker.unpause_finish" in match["rest"]:
                unpauses[match["tid"]] += 1
    return {
        activation: "cold" if state == "cold" else ("resumed" if unpauses.get(tid) else "warm")
        for tid, (activation, state) in state_by_tid.items()
    }


def main() -> None:
    truth = log_classes(Path(sys.argv[1]))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["run", "activation_id", "start_ms", "end_ms", "wait_ms", "init_ms", "log_class"])
    for run_dir in map(Path, sys.argv[2:]):
        for line in (run_dir / "activations.jsonl").read_text().splitlines():
            record = json.loads(line)
            notes = {note["key"]: note["value"] for note in record.get("annotations", [])}
            if record["activationId"] in truth:
                out.writerow(
                    [
                        run_dir.name.split("-")[0],
                        record["activationId"],
                        record["start"],
                        record["end"],
                        notes.get("waitTime", ""),
                        notes.get("initTime", ""),
                        truth[record["activationId"]],
                    ]
                )


if __name__ == "__main__":
    main()
