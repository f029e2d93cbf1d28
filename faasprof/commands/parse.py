"""``faasprof parse KIND FILE [--out CSV]``: a collector's raw output → tidy CSV.

For output collected by hand (or re-parsing a run's ``monitors/<name>/`` files): the same parsers
and derived metrics as ``faasprof analyze``, without a run directory. Times are the tool's own
(seconds since it started, or since the first block event), not a run clock.

The kinds and their options come from the collector registry (``faasprof.monitoring.collectors``): each
collector declares the kinds it parses (perf; pqos and resctrl for rdt; blktrace; cgroups; ...)
and the options each kind reads. ``faasprof parse --help`` lists them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faasprof.errors import ConfigError, FormatError
from faasprof.monitoring.collectors import parse_kinds

KINDS = tuple(parse_kinds())


def _merged_arguments() -> dict[str, tuple[dict, str]]:
    """``{flag: (argparse kwargs, help)}``: one option per flag, its help naming the kinds that
    read it (kinds with the same help text share one entry: ``pqos/resctrl: ...``)."""
    found: dict[str, tuple[dict, dict[str, list[str]]]] = {}
    for kind in parse_kinds().values():
        for argument in kind.arguments:
            kwargs, helps = found.setdefault(argument.flag, (dict(argument.kwargs), {}))
            helps.setdefault(argument.help, []).append(kind.name)
    return {
        flag: (kwargs, "; ".join(f"{'/'.join(names)}: {text}" for text, names in helps.items()))
        for flag, (kwargs, helps) in found.items()
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parse_kinds()
    parser.add_argument(
        "kind",
        choices=tuple(kinds),
        help="which tool wrote FILE: " + "; ".join(f"{name}: {kind.help}" for name, kind in kinds.items()),
    )
    parser.add_argument("file", help="the raw output file ('-' for stdin)")
    parser.add_argument("--out", help="write the CSV here (default: stdout)")
    for flag, (kwargs, text) in _merged_arguments().items():
        parser.add_argument(flag, help=text, **kwargs)


def parse_text(kind: str, text: str, args: argparse.Namespace):
    """The frame for ``kind`` (shared by the CLI and tests)."""
    return parse_kinds()[kind].parse(text, args)


def main(args: argparse.Namespace) -> int:
    interval_ms = getattr(args, "interval_ms", None)
    if interval_ms is not None and interval_ms <= 0:
        raise ConfigError(f"--interval-ms: must be > 0 (got {interval_ms:g})")
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
            raise ConfigError(
                f"{path}: is a directory; pass the raw {args.kind} output file (e.g. monitors/{args.kind}/...)"
            ) from None
        except OSError as error:
            raise ConfigError(f"{path}: cannot read ({error.strerror})") from None
        name = str(path)
    try:
        frame = parse_text(args.kind, text, args)
    except FormatError as error:
        raise FormatError(f"{name}: {error}; is this raw {args.kind} output? (see `faasprof parse --help`)") from None
    if frame.empty:
        raise FormatError(
            f"{name}: no {args.kind} rows found; is this raw {args.kind} output? (see `faasprof parse --help`)"
        )
    if args.out:
        out = Path(args.out)
        if out.parent and not out.parent.exists():
            raise ConfigError(f"--out: {out.parent} does not exist; create it or pass another path")
        frame.to_csv(out, index=False)
        print(f"{name}: {len(frame)} rows → {out}", file=sys.stderr)
    else:
        frame.to_csv(sys.stdout, index=False)
    return 0
