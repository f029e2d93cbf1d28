"""The ``faasprof`` command: a thin dispatcher over one module per subcommand.

Each subcommand is ``faasprof/commands/<name>.py``; it exposes ``add_arguments(parser)`` and ``main(args) -> int`` and is imported
only when its subcommand runs, so ``faasprof validate`` does not pay for pandas or matplotlib.
Helpers raise :class:`faasprof.errors.FaasprofError`; only this module prints them and exits.

Exit codes: 0 success, 1 failure while running, 2 bad input, 3 environment not ready.

Ctrl-C is one line (``interrupted``) and exit 1 wherever it lands. While the subcommand's modules
load (a second or more on a busy host) it is held until they have, then honoured: an interrupt
raised inside an extension module's initialisation prints a traceback, or crashes the process.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Iterator

import faasprof
from faasprof import __version__, plugins
from faasprof.errors import EXIT_FAILURE, FaasprofError
from faasprof.paths import CHECKOUT_ROOT, foreign_checkout
from faasprof.rundir import private_files

# name -> one-line help; the command's module is faasprof.commands.<name>. Order is `faasprof --help`'s.
COMMANDS: dict[str, str] = {
    "validate": "check workload JSONs and report every problem",
    "examples": "list the workloads shipped with faasprof, or copy one here to edit",
    "plan": "dry run: write the merged invocation schedule, contact nothing",
    "run": "run a workload open-loop and write a run directory",
    "analyze": "join a run's invocations with activation records; frames, plots, report",
    "compare": "compare several runs in one frame and overlaid plots",
    "capacity": "find the highest rate at which a function stays balanced",
    "slowdown": "measure the slowdown of functions in FaaS against native execution (Figs 15, 16)",
    "interference": "run the Fig 14 workload: a victim's latency beside system counters while an aggressor runs",
    "mpki": "branch MPKI against median execution time per function (Figs 6, 7); needs hardware counters",
    "reproduce": "regenerate the MICRO'19 paper's figures on this host, each beside the paper's finding with a verdict",
    "trace": "sample representative functions of an Azure Functions trace day into a workload; calibrate the mapping",
    "sweep": "run a workload over LLC ways, bandwidth, memory limits or rates",
    "deploy": "package benchmark functions and create or update their actions",
    "native": "run a benchmark function natively, outside any platform",
    "parse": "turn a collector's raw output (perf, pqos, blkparse, ...) into a tidy CSV",
    "local": "start, stop or inspect localwhisk, the embedded platform",
    "doctor": "report what this host can measure and what is missing",
    "cache": "show where faasprof's build products are (zips, npm packages, virtualenvs) and clean them",
}


# The commands that write run directories (or analyses into them): they run under
# rundir.private_files, so that every file created there is private, whoever writes it.
RUN_DIR_COMMANDS = frozenset(
    {"run", "analyze", "compare", "capacity", "slowdown", "interference", "mpki", "reproduce", "sweep", "native"}
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser; with ``only``, import just that subcommand's module."""
    parser = argparse.ArgumentParser(
        prog="faasprof",
        description="Profile Function-as-a-Service platforms (Apache OpenWhisk or the embedded localwhisk).",
    )
    parser.add_argument("--version", action="version", version=f"faasprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or only == name:
            module = importlib.import_module(f"faasprof.commands.{name}")
            module.add_arguments(sub_parser)
            sub_parser.set_defaults(_module=module)
    return parser


class _StdoutWithoutReader:
    """stdout that outlives its reader. Once the pipe's reader has gone (``faasprof plan W --out
    S | head -1``), what is left to print goes nowhere and the command still finishes its work:
    the schedule is written, the run completes, the exit status is the command's own."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        # The descriptor itself is pointed at /dev/null, so the buffered text and the interpreter's
        # last flush at exit go there too, instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _print_error(error: FaasprofError) -> None:
    problems = getattr(error, "problems", None) or [str(error)]
    for line in problems:
        print(line, file=sys.stderr)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """SIGINT while the block runs is noted (in the list yielded), not raised; main thread only."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    with _interrupts_held() as held:
        parser = build_parser(only=chosen if chosen in COMMANDS else "")
    if held:  # nothing has started: there is nothing to stop or keep
        print("interrupted", file=sys.stderr)
        return EXIT_FAILURE
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help(sys.stderr)
        return 2
    other = foreign_checkout()
    if other is not None:
        running = CHECKOUT_ROOT or Path(faasprof.__file__).resolve().parent
        print(
            f"faasprof: note: running the faasprof at {running}, not the checkout {other} you are in "
            f"(use {other}/.venv/bin/faasprof, or run ./setup.sh there)",
            file=sys.stderr,
        )
    if args.command != "doctor":  # doctor lists them among its findings
        for failure in plugins.failures():
            print(f"faasprof: warning: {failure.line()}", file=sys.stderr)
    stdout = sys.stdout
    if hasattr(stdout, "fileno"):
        sys.stdout = _StdoutWithoutReader(stdout)
    try:
        with private_files() if args.command in RUN_DIR_COMMANDS else contextlib.nullcontext():
            return int(args._module.main(args) or 0)
    except FaasprofError as error:
        _print_error(error)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        sys.stdout = stdout
