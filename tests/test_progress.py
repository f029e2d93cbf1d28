"""``faasprof.progress``: the one reporter the run path speaks through (the command layer picks
where its lines go; the layers below never print and never ask whether anybody listens)."""

from __future__ import annotations

import io

from faasprof.progress import QUIET, Progress


def test_lines_go_whole_to_the_writer_warnings_prefixed():
    said: list[str] = []
    progress = Progress(said.append)
    progress.say("run directory runs/x; 10 invocations over 1 s")
    progress.warn("collector perf stopped during the run")
    progress.alert("capacity of spin: ≥ 8/s, a lower bound")
    assert said == [
        "run directory runs/x; 10 invocations over 1 s",
        "warning: collector perf stopped during the run",
        "warning: capacity of spin: ≥ 8/s, a lower bound",
    ]


def test_quiet_keeps_only_the_alerts_and_the_default_says_nothing():
    said: list[str] = []
    quiet = Progress(said.append, quiet=True)
    quiet.say("analyzing")
    quiet.warn("3 of 10 activation records missing")
    quiet.alert("analysis failed (disk full)")
    assert said == ["warning: analysis failed (disk full)"]
    QUIET.say("nobody")  # nowhere, and no error
    QUIET.alert("nobody")


def test_a_stream_gets_one_flushed_line_each():
    class Stream(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            Stream.flushes += 1
            super().flush()

    stream = Stream()
    Progress.to(stream, quiet=True).alert("x")
    Progress.to(stream).say("y")
    assert stream.getvalue() == "warning: x\ny\n" and Stream.flushes == 2
