"""Every command ``faasprof reproduce`` suggests runs from the directory the user ran it in: the
report's ``faasprof analyze`` lines name the run directories as that directory reaches them (they
named them relative to the reproduce folder, and failed from the checkout)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from faasprof.experiments import reproduce_report as report


def test_analyze_commands_name_paths_the_users_directory_reaches(tmp_path, monkeypatch):
    work = tmp_path / "checkout"
    out = work / "runs" / "reproduce-20260101T000000Z"
    probe = work / "runs" / "capacity" / "capacity-json_dumps-5ps-x"
    for folder in (out, probe):
        folder.mkdir(parents=True)
    relative = os.path.relpath(probe, out)  # how the report keeps it, for its links
    monkeypatch.chdir(work)
    (command,) = report.analyze_commands([relative], out)
    assert command == "faasprof analyze runs/capacity/capacity-json_dumps-5ps-x"
    assert Path(shlex.split(command)[2]).is_dir()  # from the user's directory
    # The reproduce folder given relative to the user's directory: the same.
    (command,) = report.analyze_commands([relative], Path("runs") / out.name)
    assert Path(shlex.split(command)[2]).is_dir()
    # From a directory the runs are not under: absolute.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (command,) = report.analyze_commands([relative], out)
    assert shlex.split(command)[2] == str(probe.resolve())
