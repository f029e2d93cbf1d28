"""The ``faasprof`` console script and ``python -m faasprof``: Ctrl-C is held from the first line.

A command's modules take a second or more to load on a busy host (numpy, pandas and faasprof's own,
compiled on the first run). A SIGINT in that time raised KeyboardInterrupt inside an import, before
``faasprof.cli`` could hold it: a traceback, and the process killed by the signal (exit -2) instead
of ``interrupted`` and exit 1. So the handler is set here, before ``faasprof.cli`` is imported; an
interrupt noted while it loads ends the command as one during the parser's set-up does (nothing has
started), and one after is ``faasprof.cli``'s to handle. The window left is the interpreter's own
start (tens of milliseconds).
"""

from __future__ import annotations

import signal
import sys

_held: list[int] = []
_previous = signal.signal(signal.SIGINT, lambda signum, frame: _held.append(signum))

# Imported after the handler on purpose: this import is what must not be cut by a Ctrl-C.
from faasprof import cli  # noqa: E402
from faasprof.errors import EXIT_FAILURE  # noqa: E402


def main() -> int:
    """Run the command named by ``sys.argv``; ``interrupted`` and exit 1 for a Ctrl-C at any point."""
    try:
        signal.signal(signal.SIGINT, _previous)
        if _held:
            print("interrupted", file=sys.stderr)
            return EXIT_FAILURE
        return cli.main()
    except KeyboardInterrupt:  # between cli.main's own holds (argument parsing, plug-in warnings)
        print("interrupted", file=sys.stderr)
        return EXIT_FAILURE
