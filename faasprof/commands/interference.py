"""``faasprof interference [WORKLOAD]``: run the Figure 14 workload with the victim at a fraction of
its capacity and draw its latency beside the system's counters (see ``faasprof.experiments.interference``).

The capacity comes from ``--capacity-rps``, ``--capacity-file`` (a ``faasprof capacity`` result) or
``--measure-capacity`` (a capacity search first); with none, the workload's stored rate is used and
said so. ``--report RUN_DIR`` only draws the figure for a run that already ran. The last line of
stdout is the run directory; the figure is ``analysis/plots/fig14_interference.png`` in it.

``--repeats N`` runs the workload N times into one repeats folder (its path the last line of
stdout), each run with its own figure, and states the victim's slowdown during and after the
aggressor over the runs, each run one sample (``faasprof.experiments.interference_repeats``): a
verdict only from two runs or more; one run gives the figures and ``run_stats.ONE_RUN_NOTE``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from faasprof import rundir
from faasprof.analyzer.compare_sides import read_repeats
from faasprof.analyzer.run_stats import DEFAULT_MIN_EFFECT, add_min_effect_argument
from faasprof.commands.run import local_settings
from faasprof.errors import ConfigError
from faasprof.experiments.analyzed import execute_analyzed
from faasprof.experiments.capacity import find_capacity
from faasprof.experiments.interference import RESULT, capacity_from_file, report_run, resolve_rate
from faasprof.experiments.interference_repeats import compare_windows, comparison_lines, run_latency, write_result
from faasprof.experiments.repeat import check_repeats, run_repeats
from faasprof.invoker.preflight import check_out_dir
from faasprof.paths import WORKLOAD_CONFIGS_DIR
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.progress import Progress
from faasprof.workload.access import add_access_arguments, grants_from
from faasprof.workload.spec import workload_from_dict

DEFAULT_WORKLOAD = WORKLOAD_CONFIGS_DIR / "fig14_interference.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "workload",
        nargs="?",
        default=str(DEFAULT_WORKLOAD),
        metavar="WORKLOAD",
        help="workload JSON (default faasprof/workload_configs/fig14_interference.json)",
    )
    parser.add_argument(
        "--victim",
        default="json_dumps",
        metavar="INSTANCE",
        help="instance whose rate is set from the capacity and whose latency is drawn (default json_dumps)",
    )
    parser.add_argument(
        "--aggressor",
        default="deltablue",
        metavar="INSTANCE",
        help="instance whose activity window is shaded (default deltablue)",
    )
    capacity = parser.add_mutually_exclusive_group()
    capacity.add_argument("--capacity-rps", type=float, metavar="RPS", help="the victim's capacity, measured before")
    capacity.add_argument("--capacity-file", metavar="FILE", help="a result JSON of `faasprof capacity VICTIM`")
    capacity.add_argument(
        "--measure-capacity",
        action="store_true",
        help="run a capacity search for the victim's function first (a few minutes)",
    )
    parser.add_argument(
        "--fraction", type=float, default=0.8, help="victim rate as a fraction of its capacity (default 0.8)"
    )
    parser.add_argument("--out", default="runs", metavar="DIR", help="where the run directory goes (default runs/)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        metavar="N",
        help="run the workload N times; the slowdown gets an interval over the runs and a verdict (5 is a good start)",
    )
    add_min_effect_argument(parser)
    parser.add_argument("--report", metavar="RUN_DIR", help="do not run: draw the figure for this finished run")
    local = parser.add_argument_group("embedded localwhisk only")
    local.add_argument(
        "--isolation",
        choices=("auto", "cgroup", "rlimit", "docker"),
        help="sandboxes as processes or Docker containers (default auto)",
    )
    local.add_argument(
        "--pause-grace", type=float, metavar="MS", help="idle time before a warm sandbox is paused (default 50)"
    )
    local.add_argument("--user-memory", type=int, metavar="MB", help="memory budget of the pool (default 4096)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_connection_arguments(parser)
    add_access_arguments(parser)


def main(args: argparse.Namespace) -> int:
    check_repeats(args.repeats, [args.workload])
    if not 0 <= args.min_effect < 1:
        raise ConfigError(f"--min-effect {args.min_effect:g}: give a share in [0, 1), e.g. 0.05 for 5 %")
    if args.report:
        run_dir = Path(args.report)
        if not rundir.is_run_dir(run_dir):
            raise ConfigError(
                f"{run_dir}: --report: not a run directory (no {rundir.MANIFEST}); pass the directory `faasprof interference` or `faasprof run` printed"
            )
        stored = run_dir / "analysis" / "interference.json"
        rate = json.loads(stored.read_text()).get("rate") if stored.is_file() else None
        return _show(report_run(run_dir, args.victim, args.aggressor, rate), run_dir, args.min_effect)

    path = Path(args.workload)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such workload file; pass a workload JSON (default {DEFAULT_WORKLOAD})") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None
    check_out_dir(args.out)
    connection = resolve_connection(args, data.get("platform") if isinstance(data, dict) else None, origin=str(path))
    settings = local_settings(args, (data.get("platform") if isinstance(data, dict) else None) or {})
    progress = Progress.to(sys.stderr, quiet=args.quiet)
    capacity_rps, source = None, ""
    if args.capacity_rps is not None:
        capacity_rps, source = args.capacity_rps, "--capacity-rps"
    elif args.capacity_file:
        capacity_rps, source = capacity_from_file(args.capacity_file), f"capacity result {args.capacity_file}"
    elif args.measure_capacity:
        function = ((data.get("instances") or {}).get(args.victim) or {}).get("application", args.victim)
        result = find_capacity(
            function,
            out_dir=args.out,
            duration_s=5.0,
            connection=connection,
            local_settings=settings,
            start_rate=2.0,
            tolerance=0.25,
            max_runs=8,
            progress=progress,
        )
        if result["capacity_rps"] is None:
            raise ConfigError(f"{function}: no capacity found ({result['stopped_because']}); pass --capacity-rps")
        capacity_rps, source = result["capacity_rps"], f"measured now: {result['result_file']}"
    resolved, rate = resolve_rate(data, args.victim, capacity_rps, args.fraction, source)
    if not args.quiet:
        print(f"{args.victim}: {rate['rate_rps']}/s ({rate['source']})", file=sys.stderr)
    workload = workload_from_dict(resolved, origin=str(path), path=path, grants=grants_from(args))

    def run_and_report(out: str | Path) -> Path:
        run_dir = execute_analyzed(
            workload, out, connection=connection, local_settings=settings, progress=progress, analyze=True
        )
        report_run(run_dir, args.victim, args.aggressor, rate)
        return run_dir

    if args.repeats == 1:
        run_dir = run_and_report(args.out)
        return _show(run_dir / "analysis" / RESULT, run_dir, args.min_effect)

    def run_one(_config: str, folder: Path) -> int:
        run_and_report(folder)
        return 0  # no thresholds here: a run completes (its status in its manifest) or raises, ending the repeats

    repeated = run_repeats([str(path)], args.repeats, args.out, run_one, progress=progress)
    _show_repeats(repeated.folder, args.victim, args.min_effect)
    return repeated.exit_status


def _show_repeats(folder: Path, victim: str, min_effect: float) -> None:
    """The repeated runs' comparison, printed and written beside them; the folder last."""
    run_dirs = [run for side in read_repeats(folder) for run in side.runs]
    comparisons = compare_windows([run_latency(run) for run in run_dirs], min_effect)
    written = write_result(folder, run_dirs, comparisons, min_effect)
    for line in comparison_lines(victim, comparisons, min_effect):
        print(line)
    print(f"comparison: {written}")
    print(folder)


def _show(result_path: Path, run_dir: Path, min_effect: float = DEFAULT_MIN_EFFECT) -> int:
    result = json.loads(result_path.read_text())
    for panel in result["panels"]:
        print(f"{panel['panel']}: " + (f"not measured ({panel['missing']})" if panel["missing"] else panel["label"]))
    latency = result.get("latency") or {}
    if latency:
        print(
            f"{result['victim']} median completion latency: "
            + ", ".join(_window_text(latency, name) for name in ("before", "during", "after"))
        )
        for line in comparison_lines(result["victim"], compare_windows([latency], min_effect), min_effect):
            print(line)
    print(f"figure: {run_dir / 'analysis' / result['figure']}")
    print(run_dir)
    return 0


def _window_text(latency: dict, name: str) -> str:
    """One window's median with its n and its ratio to before: ``12.3 ms during (n 40, ×1.52)``."""
    block = latency.get(name) or {}
    p50 = block.get("completion_latency_ms_p50")
    if p50 is None or not math.isfinite(p50):
        return f"– {name} (no successful call)"
    ratio = latency.get(f"{name}_over_before")
    factor = f", ×{ratio:.2f}" if ratio is not None and math.isfinite(ratio) else ""
    return f"{p50:.1f} ms {name} the aggressor (n {block.get('n', 0)}{factor})"
