"""``faasprof parse perf|pqos|resctrl|blktrace|cgroups FILE [--out CSV]``: raw tool output → tidy CSV.

For output collected by hand (or re-parsing a run's ``monitors/<name>/`` files): the same parsers
and derived metrics as ``faasprof analyze``, without a run directory. Times are the tool's own
(seconds since it started, or since the first block event), not a run clock.

* ``perf``: ``perf stat -x, [-I ms] ...`` output; one row per interval and unit (CPU, core,
  cgroup) with one column per event and the derived metrics; ``--long`` gives one row per counter.
* ``pqos``: ``pqos -u csv`` or text output; the first sample is dropped.
* ``resctrl``: the rdt collector's ``resctrl_samples.csv`` (cumulative bytes → MB/s).
* ``blktrace``: ``blkparse`` default text output → per-interval MB/s, IOPS and D2C latency.
* ``cgroups``: the cgroups collector's ``samples.csv`` → per-sandbox CPU, memory, throttling.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faasprof.errors import ConfigError, FormatError
from monitoring.derived import add_bandwidth_share
from monitoring.derived import add_perf_metrics
from monitoring.parsers.blkparse import blk_intervals
from monitoring.parsers.cgroups import parse_cgroup_samples
from monitoring.parsers.perf import parse_perf_stat, perf_wide
from monitoring.parsers.pqos import parse_pqos
from monitoring.parsers.resctrl import parse_resctrl_samples

KINDS = ("perf", "pqos", "resctrl", "blktrace", "cgroups")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=KINDS, help="which tool wrote FILE")
    parser.add_argument("file", help="the raw output file ('-' for stdin)")
    parser.add_argument("--out", help="write the CSV here (default: stdout)")
    parser.add_argument("--sep", default=",", help="perf: the -x separator the file was written with (default ,)")
    parser.add_argument("--long", action="store_true", help="perf: one row per counter instead of one per interval")
    parser.add_argument("--interval-ms", type=float, help="pqos: the sampling interval (-i × 100 ms; default: from the Time column); blktrace: bucket width (default 1000)")
    parser.add_argument("--peak-mbps", type=float, help="pqos/resctrl: the memory bandwidth peak, for mem_bw_share")
    parser.add_argument("--keep-first", action="store_true", help="pqos: keep the first sample (it covers almost no time)")


def parse_text(kind: str, text: str, args: argparse.Namespace):
    """The frame for ``kind`` (shared by the CLI and tests)."""
    if kind == "perf":
        long = parse_perf_stat(text, sep=args.sep)
        return long if args.long else add_perf_metrics(perf_wide(long))
    if kind == "pqos":
        interval_s = args.interval_ms / 1000.0 if args.interval_ms else None
        return add_bandwidth_share(parse_pqos(text, drop_first=not args.keep_first, interval_s=interval_s), args.peak_mbps)
    if kind == "resctrl":
        return add_bandwidth_share(parse_resctrl_samples(text), args.peak_mbps)
    if kind == "blktrace":
        return blk_intervals(text, (args.interval_ms or 1000.0) / 1000.0)
    return parse_cgroup_samples(text)


def main(args: argparse.Namespace) -> int:
    if args.interval_ms is not None and args.interval_ms <= 0:
        raise ConfigError(f"--interval-ms: must be > 0 (got {args.interval_ms:g})")
    if args.file == "-":
        text = sys.stdin.read()
        name = "<stdin>"
    else:
        path = Path(args.file)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such file; pass the raw {args.kind} output file") from None
        except IsADirectoryError:
            raise ConfigError(f"{path}: is a directory; pass the raw {args.kind} output file (e.g. monitors/{args.kind}/...)") from None
        except OSError as error:
            raise ConfigError(f"{path}: cannot read ({error.strerror})") from None
        name = str(path)
    frame = parse_text(args.kind, text, args)
    if frame.empty:
        raise FormatError(f"{name}: no {args.kind} rows found; is this raw {args.kind} output? (see `faasprof parse --help`)")
    if args.out:
        out = Path(args.out)
        if out.parent and not out.parent.exists():
            raise ConfigError(f"--out: {out.parent} does not exist; create it or pass another path")
        frame.to_csv(out, index=False)
        print(f"{name}: {len(frame)} rows → {out}", file=sys.stderr)
    else:
        frame.to_csv(sys.stdout, index=False)
    return 0
