"""``Progress``: where a long operation's lines for the person watching go.

A run, an analysis after it or a capacity search tells its progress and its warnings through one
``Progress`` handed down from the command layer, which alone decides where they go (stderr, with
``--quiet`` honoured) and whether they go anywhere: the layers below never print and never ask
whether anybody listens. ``QUIET``, the default everywhere, says nothing.

Three kinds of line:

- ``say(line)``: progress, dropped under ``--quiet``;
- ``warn(text)``: ``"warning: " + text``, dropped under ``--quiet`` too (a run's warnings are also
  kept in its manifest);
- ``alert(text)``: ``"warning: " + text`` said even under ``--quiet``, because it is kept
  nowhere else the user looks (an analysis that failed, a capacity that is only a lower bound).

Standard library only (layer 0).
"""

from __future__ import annotations

from typing import Callable, TextIO

WARNING_PREFIX = "warning: "


def _drop(line: str) -> None:
    """Nobody watches: the line goes nowhere."""


class Progress:
    """Lines for whoever watches, each given whole to ``write`` (none: dropped); ``quiet`` drops
    progress and warnings but not alerts."""

    def __init__(self, write: Callable[[str], None] | None = None, quiet: bool = False) -> None:
        self._alert = write if write is not None else _drop
        self._say = _drop if quiet else self._alert

    @classmethod
    def to(cls, stream: TextIO, quiet: bool = False) -> "Progress":
        """Each line printed to ``stream`` and flushed at once (the command layer passes stderr)."""

        def write(line: str) -> None:
            print(line, file=stream, flush=True)

        return cls(write, quiet)

    def say(self, line: str) -> None:
        self._say(line)

    def warn(self, text: str) -> None:
        self._say(WARNING_PREFIX + text)

    def alert(self, text: str) -> None:
        self._alert(WARNING_PREFIX + text)


QUIET = Progress()

__all__ = ["Progress", "QUIET", "WARNING_PREFIX"]
