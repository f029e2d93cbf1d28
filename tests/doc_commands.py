"""The command lines that the user's documents show (README.md and docs/*.md), and the one list of
those that no test runs, with the reason.

A command line is a line of a fenced ```sh block: a trailing ``\\`` joins the next line, and a
comment after two spaces and ``#`` is cut. Every one is either run by a test, which gets it through
``shown(line)`` (so the test runs what the documents show, and fails once they stop showing it),
or listed in ``NOT_RUN`` (only what needs the bare-metal testbed or two servers). The lines that
run for minutes, or run ./setup.sh, the suite or the lint in a fresh clone, are run by
``tests/test_docs_long.py``, a tier of its own (``-m docs_long``). ``tests/test_docs.py`` holds
every document to that, and checks every flag and path the documents show.

``sh_shown(line, cwd)`` runs a shown line as a reader types it: through ``sh`` (its globs, ``&&``
and ``tar`` as the shell has them) in a folder where the document's file names are real files,
``faasprof`` being this checkout's. A placeholder the test cannot make as named (the TIME of
``runs/repeats-TIME``, which the run names) is mapped to what it made (``substitute``), whole
words only, each placeholder required to be in the line.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Blocks of these languages hold command lines; the others hold files or output, never commands.
COMMAND_LANGUAGES = frozenset({"sh"})
OTHER_LANGUAGES = frozenset({"json", "ini", "python", "text", "toml"})


_TESTBED = "deploys OpenWhisk with ansible on a bare-metal Ubuntu server with sudo"

# Only what no machine of the suite's kind can run. A line that runs for minutes, builds OpenWhisk,
# runs ./setup.sh, the suite or the lint is run by tests/test_docs_long.py (-m docs_long).
NOT_RUN: dict[str, str] = {
    # docs/platforms.md
    "./setup.sh --testbed": _TESTBED,
    "./setup.sh --testbed --check": f"asks ansible what it would change on the testbed ({_TESTBED})",
    (
        "./setup.sh --testbed --openwhisk-only --set invoker_user_memory=16384m --set limit_action_memory_max=4096m"
    ): f"redeploys the testbed's OpenWhisk ({_TESTBED})",
    "FAASPROF_INVENTORY=local/inventory.ini ./setup.sh --testbed": f"two servers: {_TESTBED}",
    "faasprof run faasprof/workload_configs/first_run_modes.json --hosts local/inventory.ini": (
        "needs the two servers of the inventory; tests/test_hosts_docker.py runs --hosts against containers"
    ),
}


@dataclass(frozen=True)
class ShownCommand:
    document: str  # relative to the checkout, e.g. "docs/platforms.md"
    line: str


def documents() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each fenced block's language (as written after the fence, "" for none) and its lines."""
    blocks: list[tuple[str, list[str]]] = []
    language: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            if language is None:
                language, lines = line[3:].strip(), []
            else:
                blocks.append((language, lines))
                language = None
        elif language is not None:
            lines.append(line)
    return blocks


def command_lines(block: list[str]) -> list[str]:
    """The commands of an sh block: continuations joined, comments cut, blank lines left out."""
    commands: list[str] = []
    pending = ""
    for raw in block:
        line = re.split(r"\s{2,}#", raw, maxsplit=1)[0].strip()
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            commands.append(line)
    return commands


def shown_commands() -> list[ShownCommand]:
    shown_list = []
    for path in documents():
        for language, block in fenced_blocks(path.read_text(encoding="utf-8")):
            if language in COMMAND_LANGUAGES:
                name = path.relative_to(REPO_ROOT).as_posix()
                shown_list.extend(ShownCommand(name, line) for line in command_lines(block))
    return shown_list


def shown(line: str) -> list[str]:
    """The words of a command line the documents show; fails when none shows it."""
    documented = {command.line for command in shown_commands()}
    assert line in documented, f"no document shows {line!r} any more: run what it shows now"
    return shlex.split(line)


def substituted(line: str, substitute: Mapping[str, str]) -> str:
    """``line`` with each placeholder (a whole word of it) replaced by the test's name for it."""
    for placeholder, value in substitute.items():
        pattern = rf"(?<![\w]){re.escape(placeholder)}(?![\w])"
        assert re.search(pattern, line), f"{placeholder!r} is not a placeholder of {line!r}"
        line = re.sub(pattern, value.replace("\\", "\\\\"), line)
    return line


def sh_shown(
    line: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    substitute: Mapping[str, str] | None = None,
    path: Sequence[Path] = (),
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Runs the shown ``line`` through ``sh -c`` in ``cwd``. ``path``: folders put first on PATH
    (a venv's bin, whose ``faasprof`` and ``pip`` the line then runs); without a ``faasprof`` there,
    ``faasprof`` is a script that runs this checkout's (``python -m faasprof`` with PYTHONPATH)."""
    shown(line)
    base = dict(os.environ if env is None else env)
    if env is None:
        base.pop("WSK_CONFIG_FILE", None)
        base["HOME"] = base.get("FAASPROF_TEST_HOME", base.get("HOME", ""))
        base["PYTHONPATH"] = str(REPO_ROOT)
    with tempfile.TemporaryDirectory(prefix="faasprof-doc-bin-") as shim_dir:
        folders = [str(folder) for folder in path]
        if not any((Path(folder) / "faasprof").exists() for folder in folders):
            shim = Path(shim_dir) / "faasprof"
            shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m faasprof "$@"\n', encoding="utf-8")
            shim.chmod(0o755)
            folders.append(shim_dir)
        base["PATH"] = os.pathsep.join([*folders, base.get("PATH", "")])
        return subprocess.run(
            ["sh", "-c", substituted(line, substitute or {})],
            cwd=cwd,
            env=base,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
