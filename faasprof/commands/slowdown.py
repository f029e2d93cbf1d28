"""``faasprof slowdown FUNCTION...``: how much slower a function runs in FaaS than natively (Figs 15, 16).

Per function: native calls interleaved with warm calls (alive sandbox) and with calls after a pause
(paused sandbox), ``--repeat`` FaaS calls per phase (see ``faasprof.experiments.slowdown``). Progress goes to
stderr; stdout gets one line per function with its slowdown factors, one line per note (a factor
that shows no slowdown, one within the native calls' range, one below the records' resolution),
the fitted power-law exponents, and the output directory as the last line. Exit 0 when every function has its factors, 1 when a call failed.

One pass's factors describe its calls only (one native worker, one platform: one interpreter process
can run 10–30 % slower than another for its whole life), and say so. ``--rounds N`` makes N passes
into one folder (``slowdown-rounds-<stamp>/``, the last line) and states each function's warm
factor over them, each round's median one sample, through the run-level comparison of
``faasprof compare`` (``faasprof.experiments.reproduce_slowdown``); ``rounds.json`` keeps it.
"""

from __future__ import annotations

import argparse
import math
import sys

from faasprof import rundir
from faasprof.analyzer.run_stats import SUGGESTED_REPEATS
from faasprof.analyzer.stats import clean
from faasprof.errors import ConfigError
from faasprof.experiments.reproduce_slowdown import summarise_rounds
from faasprof.experiments.slowdown import SlowdownOptions, run_slowdown
from faasprof.experiments.slowdown_report import (
    CALLS_CSV,
    MEDIAN_CI_MIN_SAMPLES,
    NOTE_SEPARATOR,
    SLOWDOWN_CSV,
    load_calls,
    load_rows,
)
from faasprof.functions.catalogue import entries, require
from faasprof.numbers import number_text
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.progress import Progress

# rounds.json of ``--rounds N``: 1: first version (``rounds``: the passes' folders; ``functions``,
# ``exponent``, ``fitted``: reproduce_slowdown.summarise_rounds').
ROUNDS_FORMAT_VERSION = 1
ROUNDS_FILE = "rounds.json"
ISOLATIONS = {"process": "auto", "auto": "auto", "cgroup": "cgroup", "rlimit": "rlimit", "docker": "docker"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "functions", nargs="*", metavar="FUNCTION", help="catalogue functions (faasprof deploy --list lists them)"
    )
    parser.add_argument(
        "--all", action="store_true", help="every catalogue function whose runtime and packaging this host has"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=10,
        metavar="N",
        help="FaaS calls per function and phase (warm, resumed; native: one beside each, 2N; default 10)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        metavar="N",
        help="passes, each a new native worker and platform; from 2 the factor gets an interval over rounds and a verdict",
    )
    parser.add_argument(
        "--out", default="runs", metavar="DIR", help="where the slowdown-<stamp>/ directory goes (default runs/)"
    )
    parser.add_argument(
        "--pause-wait",
        type=float,
        metavar="S",
        help="idle time before each resumed call (default: embedded pause grace + 0.5 s; OpenWhisk: the grace its connection states + 0.5 s, else 11 s, past 2.x's 10 s grace)",
    )
    parser.add_argument(
        "--memory", type=int, metavar="MB", help="memory limit for functions deployed here (default: their manifest's)"
    )
    local = parser.add_argument_group("embedded localwhisk only")
    local.add_argument(
        "--isolation",
        choices=tuple(ISOLATIONS),
        help="sandboxes as processes (process = auto) or Docker containers (docker); default process",
    )
    local.add_argument(
        "--pause-grace", type=float, metavar="MS", help="idle time before a warm sandbox is paused (default 50)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_connection_arguments(parser)


def main(args: argparse.Namespace) -> int:
    if args.all and args.functions:
        raise ConfigError("FUNCTION: give function names or --all, not both")
    if args.all:
        chosen = [entry for entry in entries() if entry.available and not entry.is_variant]
        if not chosen:
            raise ConfigError("--all: no catalogue function can run on this host; see `faasprof deploy --list`")
    else:
        chosen = [require(name, where="FUNCTION") for name in dict.fromkeys(args.functions)]
    if args.rounds < 1:
        raise ConfigError(f"--rounds {args.rounds}: give at least 1 (5 gives an interval over rounds)")
    if args.pause_grace is not None and args.pause_grace < 0:
        raise ConfigError(f"--pause-grace: must be >= 0 ms (got {args.pause_grace:g})")
    if 0 < args.repeat < MEDIAN_CI_MIN_SAMPLES:
        print(
            f"warning: --repeat {args.repeat}: with fewer than {MEDIAN_CI_MIN_SAMPLES} calls per phase a median has no 95 % interval, "
            f"so a factor cannot be told from noise; use --repeat 10 (the default) or more",
            file=sys.stderr,
        )
    connection = resolve_connection(args, None, origin="faasprof slowdown")
    if connection is not None and (args.isolation or args.pause_grace is not None):
        print(
            f"warning: --isolation/--pause-grace only apply to the embedded localwhisk; {connection.apihost} is used",
            file=sys.stderr,
        )
    options = SlowdownOptions(
        repeat=args.repeat,
        pause_wait_s=args.pause_wait,
        isolation=ISOLATIONS[args.isolation] if args.isolation else None,
        pause_grace_ms=args.pause_grace,
        memory_mb=args.memory,
    )
    progress = Progress.to(sys.stderr, quiet=args.quiet)
    if args.rounds > 1:
        return _rounds(chosen, args, options, connection, progress)
    out = run_slowdown(chosen, args.out, options, connection=connection, progress=progress)
    status = _show_pass(out)
    print(
        f"one round: these factors describe this pass's calls only (one native worker, one platform); "
        f"repeat with --rounds {SUGGESTED_REPEATS} for an interval over rounds"
    )
    print(out)
    return status


def _rounds(chosen: list, args: argparse.Namespace, options: SlowdownOptions, connection, progress: Progress) -> int:
    """``--rounds N``: N passes into one folder, each function's factor over them (module docstring)."""
    folder = rundir.create_run_dir(args.out, "slowdown-rounds", monitors=False)
    outs = []
    for count in range(1, args.rounds + 1):
        progress.say(f"slowdown: round {count} of {args.rounds}")
        outs.append(run_slowdown(chosen, folder, options, connection=connection, progress=progress))
    summary = summarise_rounds([(load_rows(out / SLOWDOWN_CSV), load_calls(out / CALLS_CSV)) for out in outs])
    for entry in summary["functions"]:
        print(f"{entry['function']}: {entry['notes']}")
    exponent, low, high = summary["exponent"]
    if math.isfinite(exponent):
        interval = f" (interval {low:.3f} to {high:.3f})" if math.isfinite(low) else ""
        print(f"power law exec_warm over rounds: exponent {exponent:.3f}{interval}, {len(summary['fitted'])} functions")
    document = {
        "format_version": ROUNDS_FORMAT_VERSION,
        "rounds": [out.name for out in outs],
        **summary,
    }
    rundir.write_json_atomic(folder / ROUNDS_FILE, clean(document))
    print(folder)
    complete = all(math.isfinite(entry["factor"]) for entry in summary["functions"])
    return 0 if complete else 1


def _show_pass(out) -> int:
    """One pass's lines (module docstring); its exit status."""
    rows = load_rows(out / SLOWDOWN_CSV)
    complete = True
    for row in rows:
        factors = [row[f"slowdown_{m}_{p}"] for m in ("exec", "latency") for p in ("warm", "resumed")]
        complete &= (
            math.isfinite(row["slowdown_latency_warm"])
            and math.isfinite(row["slowdown_latency_resumed"])
            and row["warm_failed"] + row["resumed_failed"] + row["native_failed"] == 0
        )
        print(
            f"{row['function']}: slowdown execution ×{number_text(factors[0])} warm, ×{number_text(factors[1])} resumed; latency ×{number_text(factors[2])} warm, ×{number_text(factors[3])} resumed; "
            f"CPU time ×{number_text(row.get('slowdown_cpu_warm', math.nan))} warm, ×{number_text(row.get('slowdown_cpu_resumed', math.nan))} resumed"
        )
        for note in filter(None, (row.get("notes") or "").split(NOTE_SEPARATOR)):
            print(f"{row['function']}: {note}")
    manifest = rundir.read_manifest(out, kind="slowdown")
    for key, fit in (manifest.extra.get("fits") or {}).items():
        if fit:
            print(
                f"power law {key}: slowdown = {fit['coefficient']:.3g} · native_ms^{fit['exponent']:.3f} (R² {fit['r2']:.2f}, {fit['points']} functions)"
            )
    return 0 if complete else 1
