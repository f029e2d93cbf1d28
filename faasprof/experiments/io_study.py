"""I/O studies: memory size, concurrency and function parameters (chunk size, storage backend)
swept over batches of parallel invocations, with the breakdown, bandwidth and cost/response-time
figures of the Kookmin studies (see faasprof/workload_configs/io_*.json for which figure each mirrors).

A workload's ``io_study`` block::

    "io_study": {"instance": "dl", "memory_mb": [128, 256, 512], "concurrency": [1, 4, 8],
                 "params": {"size_bytes": [10000000, 50000000], "backend": ["s3", "file"]},
                 "batches": 3, "batch_gap_s": 4, "cooldown_s": 1}

Each point of the product is one run (``faasprof.invoker.run.execute``, which also starts the workload's
``storage`` servers): the instance becomes a Burst of ``concurrency`` simultaneous invocations
every ``batch_gap_s``, ``batches`` times (the first ``warmup_batches``, default 1, create the
sandboxes and stay out of the summary, so the figures are of warm invocations), invoking the ``<function>-<MB>`` variant with the
point's params. After each run its records are analysed (``faasprof.analyzer.io_breakdown``); the study
directory gets ``io_study.json`` (format_version, one summary per point), ``io_study.csv`` and
the plots ``io_bandwidth.png`` (bandwidth against memory and concurrency) and
``io_cost_response.png`` (batch response time against its cost, 1 ms and 100 ms billing).

Run: ``python -m faasprof.experiments.io_study WORKLOAD --out DIR`` (exit 0 ok, 1 a point failed, 2 bad
input, 3 environment not ready).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import sys
import time
from pathlib import Path

import pandas as pd

from faasprof import rundir
from faasprof.analyzer import io_breakdown
from faasprof.analyzer.plots import new_figure
from faasprof.errors import ConfigError, FaasprofError
from faasprof.invoker.run import execute
from faasprof.progress import QUIET, Progress
from faasprof.workload.arrivals import DISTRIBUTIONS
from faasprof.workload.spec import load_workload, workload_from_dict

FORMAT_VERSION = 1
STUDY_FILE = "io_study.json"
STUDY_CSV = "io_study.csv"


def study_points(study: dict) -> list[dict]:
    """Every point: {memory_mb, concurrency, params} in a fixed order (memory, concurrency, params)."""
    memories = study.get("memory_mb") or [None]
    concurrencies = study.get("concurrency") or [1]
    names = sorted((study.get("params") or {}).keys())
    values = [study["params"][name] for name in names]
    points = []
    for memory, concurrency, combo in itertools.product(
        memories, concurrencies, itertools.product(*values) if names else [()]
    ):
        points.append({"memory_mb": memory, "concurrency": int(concurrency), "params": dict(zip(names, combo))})
    return points


def point_label(point: dict) -> str:
    parts = []
    if point["memory_mb"] is not None:
        parts.append(f"mem{point['memory_mb']}")
    parts.append(f"c{point['concurrency']}")
    parts += [f"{name}{value}" for name, value in point["params"].items()]
    return "-".join(str(part).replace("/", "_") for part in parts)


def _base_name(application: str) -> str:
    head, sep, tail = application.rpartition("-")
    return head if sep and tail.isdigit() else application


def apply_point(data: dict, point: dict, index: int) -> dict:
    """The workload of one point: the studied instance as a Burst; the other instances kept."""
    data = copy.deepcopy(data)
    study = data.pop("io_study")
    data.pop("sweep", None)
    name = study.get("instance") or next(iter(data["instances"]))
    spec = data["instances"][name]
    batches = int(study.get("batches", 3))
    gap_s = float(study.get("batch_gap_s", 2))
    # Every key of the distribution it had goes (a Burst refuses another distribution's keys).
    for key in ("rate", "interarrivals_list", *(key for d in DISTRIBUTIONS.values() for key in d.keys)):
        spec.pop(key, None)
    spec.update(distribution="Burst", burst_size=point["concurrency"], burst_gap_s=gap_s)
    if point["memory_mb"] is not None:
        spec["application"] = f"{_base_name(spec['application'])}-{point['memory_mb']}"
        spec["memory_mb"] = int(point["memory_mb"])
    if point["params"]:
        spec["params"] = {**(spec.get("params") or {}), **point["params"]}
    # The last batch goes out at (batches - 1) x gap; the run lasts one gap more for it to finish.
    data["test_duration_in_seconds"] = batches * gap_s
    data["blocking_cli"] = True
    data["test_name"] = f"{data['test_name']}-p{index:03d}-{point_label(point)}"
    return data


def check_study(workload) -> list[dict]:
    study = (workload.raw or {}).get("io_study")
    if not study:
        raise ConfigError(
            f"{workload.origin}: no io_study block; add io_study with memory_mb, concurrency or params to sweep"
        )
    name = study.get("instance") or workload.instances[0].name
    if name not in {instance.name for instance in workload.instances}:
        raise ConfigError(
            f"{workload.origin}: io_study.instance {name!r} is not an instance of the workload; use one of {', '.join(i.name for i in workload.instances)}"
        )
    batches, warmup = int(study.get("batches", 3)), int(study.get("warmup_batches", 1))
    if warmup >= batches:
        raise ConfigError(
            f"{workload.origin}: io_study.batches {batches} must exceed io_study.warmup_batches {warmup}; raise batches or lower warmup_batches"
        )
    points = study_points(study)
    for index, point in enumerate(points):  # every point valid before the first one runs
        workload_from_dict(
            apply_point(workload.raw, point, index),
            origin=f"{workload.origin} (io_study point {point_label(point)})",
            path=workload.path,
            seed=workload.seed,
        )
    return points


def run_study(workload, out_dir: str | Path, progress: Progress = QUIET, run_point=None) -> Path:
    """Run every point, analyse each run, write the study files and plots; return the study dir."""
    points = check_study(workload)
    if run_point is None:

        def run_point(point_workload, directory):
            return execute(point_workload, directory, progress=progress)

    study_dir = rundir.create_run_dir(out_dir, f"{workload.test_name}-io-study", monitors=False)
    study = workload.raw["io_study"]
    results = []
    failed = 0
    for index, point in enumerate(points):
        progress.say(f"[{index + 1:3d}/{len(points)}] {point_label(point)}")
        point_workload = workload_from_dict(
            apply_point(workload.raw, point, index),
            origin=f"{workload.origin} (io_study point {point_label(point)})",
            path=workload.path,
            seed=workload.seed + index,
        )
        entry: dict[str, object] = {"point": point, "label": point_label(point)}
        try:
            run_dir = Path(run_point(point_workload, study_dir))
            entry["run_dir"] = run_dir.name
            entry["status"] = rundir.read_manifest(run_dir).status
            entry["summary"] = io_breakdown.summarise(run_dir, warmup_batches=int(study.get("warmup_batches", 1)))
        except FaasprofError as error:
            entry["status"], entry["error"] = "failed", str(error)
            failed += 1
            progress.say(f"io_study point {point_label(point)} failed: {error}")
        results.append(entry)
        rundir.write_json_atomic(
            study_dir / STUDY_FILE,
            {"format_version": FORMAT_VERSION, "workload": workload.origin, "io_study": study, "points": results},
        )
        if index + 1 < len(points):
            time.sleep(float(study.get("cooldown_s", 1)))
    write_outputs(study_dir)
    if failed:
        raise StudyIncomplete(study_dir, failed)
    return study_dir


class StudyIncomplete(FaasprofError):
    exit_code = 1

    def __init__(self, study_dir: Path, failed: int):
        super().__init__(f"{study_dir}: {failed} io_study point(s) failed; see {STUDY_FILE} there for why")
        self.study_dir = study_dir


def study_frame(study_dir: str | Path) -> pd.DataFrame:
    """One row per point that produced a summary."""
    data = json.loads((Path(study_dir) / STUDY_FILE).read_text())
    if data.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            f"{study_dir}/{STUDY_FILE}: format_version {data.get('format_version')} is not {FORMAT_VERSION}; re-run the study with this faasprof"
        )
    rows = []
    for entry in data["points"]:
        summary = entry.get("summary") or {}
        if not summary.get("invocations"):
            continue
        point = entry["point"]
        row = {
            "label": entry["label"],
            "memory_mb": point["memory_mb"] or summary.get("memory_mb"),
            "concurrency": point["concurrency"],
            **point["params"],
        }
        row.update(
            invocations=summary["invocations"],
            duration_ms_median=summary["duration_ms_median"],
            response_ms_median=summary["response_ms_median"],
            network_mb_per_s_median=summary["network_mb_per_s_median"],
            aggregate_network_mb_per_s_median=summary["aggregate_network_mb_per_s_median"],
            disk_mb_per_s_median=summary["disk_mb_per_s_median"],
            breakdown_within_tolerance=summary["breakdown_within_tolerance"],
            **{f"{phase}_ms_median": value for phase, value in summary["breakdown_ms_median"].items()},
            **{f"{unit}_per_batch": value for unit, value in summary["gb_s_per_batch_median"].items()},
        )
        rows.append(row)
    return pd.DataFrame(rows)


def write_outputs(study_dir: str | Path) -> list[Path]:
    """io_study.csv and the two plots; returns the files written."""
    study_dir = Path(study_dir)
    frame = study_frame(study_dir)
    written: list[Path] = []
    if frame.empty:
        return written
    frame.to_csv(study_dir / STUDY_CSV, index=False)
    written.append(study_dir / STUDY_CSV)
    written.append(plot_bandwidth(frame, study_dir / "io_bandwidth.png"))
    written.append(plot_cost_response(frame, study_dir / "io_cost_response.png"))
    return written


def _series(frame: pd.DataFrame, by: str):
    others = [
        c
        for c in frame.columns
        if c not in (by,) and c in ("memory_mb", "concurrency", "size_bytes", "backend", "op", "direction", "pattern")
    ]
    if not others:
        yield "", frame
        return
    for key, group in frame.groupby(others, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        yield ", ".join(f"{name}={_text(value)}" for name, value in zip(others, key)), group.sort_values(by)


def _text(value) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def plot_bandwidth(frame: pd.DataFrame, path: Path) -> Path:
    """Per-invocation and aggregate network bandwidth against memory and against concurrency."""
    fig, axes = new_figure(1, 2, figsize=(12, 4.5))
    for axis, by in zip(axes, ("memory_mb", "concurrency")):
        for label, group in _series(frame, by):
            x = group[by].astype(float)
            line = axis.plot(
                x,
                group["network_mb_per_s_median"].astype(float),
                marker="o",
                label=f"per invocation (bytes / its network time) {label}".strip(),
            )[0]
            axis.plot(
                x,
                group["aggregate_network_mb_per_s_median"].astype(float),
                marker="s",
                linestyle="--",
                color=line.get_color(),
                label=f"aggregate (batch bytes / batch response time) {label}".strip(),
            )
        axis.set_xlabel("memory (MB)" if by == "memory_mb" else "invocations at once")
        axis.set_ylabel("network bandwidth (MB/s, median)")
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    axes[0].set_title("bandwidth against memory size")
    axes[1].set_title("bandwidth against concurrency")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def plot_cost_response(frame: pd.DataFrame, path: Path) -> Path:
    """Batch response time against its cost, one point per study point, labelled by concurrency."""
    fig, axes = new_figure(1, 2, figsize=(12, 4.5))
    for axis, unit, title in zip(
        axes, ("gb_s_1ms_per_batch", "gb_s_100ms_per_batch"), ("1 ms billing", "100 ms billing")
    ):
        for label, group in _series(frame, "concurrency"):
            axis.plot(group[unit].astype(float), group["response_ms_median"].astype(float), marker="o", label=label)
            for _, row in group.iterrows():
                axis.annotate(
                    f"x{int(row['concurrency'])}",
                    (float(row[unit]), float(row["response_ms_median"])),
                    fontsize=7,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
        axis.set_xlabel(f"cost of a batch (GB-s, {title})")
        axis.set_ylabel("batch response time (ms, median)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
        axis.set_title(f"response time against cost ({title})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m faasprof.experiments.io_study",
        description="Run a workload's io_study block: one run per point, breakdown, bandwidth and cost plots.",
    )
    parser.add_argument(
        "workload", help="a workload JSON with storage and io_study blocks (faasprof/workload_configs/io_*.json)"
    )
    parser.add_argument("--out", default="runs", help="directory for the study directory (default: runs)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    try:
        workload = load_workload(args.workload)
        study_dir = run_study(workload, args.out, progress=Progress.to(sys.stderr, quiet=args.quiet))
    except FaasprofError as error:  # ConfigError 2, NotReadyError 3, a failed point 1
        print(f"io_study: {error}", file=sys.stderr)
        return error.exit_code
    print(study_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
