"""The command lines that the user's documents show (README.md and docs/*.md), and the one list of
those that no test runs, with the reason.

A command line is a line of a fenced ```sh block: a trailing ``\\`` joins the next line, and a
comment after two spaces and ``#`` is cut. Every one is either run by a test, which gets it through
``shown(line)`` (so the test runs what the documents show, and fails once they stop showing it),
or listed in ``NOT_RUN``. ``tests/test_docs.py`` holds every document to that, and checks every
flag and path the documents show.

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


_SUITE = "it runs the test suite itself, which no test of the suite can"
_CHECKOUT = "./setup.sh installs system packages on a fresh machine; .ci/run runs ./setup.sh --dev on a clean clone"
_OPENWHISK_BUILD = "builds OpenWhisk 2.0.0 from source (JDK 17, Maven, Docker)"
_TESTBED = "deploys OpenWhisk with ansible on a bare-metal Ubuntu server with sudo"

NOT_RUN: dict[str, str] = {
    # README.md
    "./setup.sh && .venv/bin/faasprof run faasprof/workload_configs/first_run_modes.json --analyze": (
        f"{_CHECKOUT}; the run takes minutes (a capacity search, then three 10-second phases), over the suite's "
        "budget; tests/test_openwhisk_tier.py runs the same workload on OpenWhisk"
    ),
    "./setup.sh && .venv/bin/faasprof run faasprof/workload_configs/paper_listing1.json --analyze": (
        f"{_CHECKOUT}; on a small host every phase is over-invoked and its backlog drains for minutes; "
        "tests/test_docs.py validates and plans the workload"
    ),
    "./setup.sh --dev && .venv/bin/python -m pytest -q": f"{_SUITE}; it is .ci/run's command",
    '.venv/bin/python -m pytest -q -m "not slow"': _SUITE,
    ".venv/bin/python -m pytest -q -m openwhisk": f"{_SUITE}; needs a deployed OpenWhisk",
    ".venv/bin/python -m pytest -q -m hardware": f"{_SUITE}; needs perf hardware events, Intel RDT and blktrace",
    # docs/development.md
    ".venv/bin/python -m pytest -m openwhisk -n 0 tests/test_openwhisk_tier.py": (
        f"{_SUITE}; needs OpenWhisk standalone built by ./setup.sh --openwhisk"
    ),
    ".ci/lint": "CI (.ci/run) runs it before the tests; a test running it would lint the tree it is testing",
    # docs/platforms.md
    "./setup.sh --openwhisk --source OPENWHISK_2.0.0_EXPORT": f"{_OPENWHISK_BUILD}, from an export you have",
    "faasprof local start --platform openwhisk": f"needs OpenWhisk standalone, which {_OPENWHISK_BUILD}",
    (
        "./setup.sh --openwhisk && .venv/bin/faasprof local start --platform openwhisk --pause-grace-ms 250 "
        "&& .venv/bin/faasprof run faasprof/workload_configs/first_run_modes.json --analyze; "
        ".venv/bin/faasprof local stop"
    ): (
        f"{_OPENWHISK_BUILD}; tests/test_openwhisk_tier.py (-m openwhisk) runs this main job on the server it starts "
        "with the pause grace shown"
    ),
    "./setup.sh --testbed": _TESTBED,
    "./setup.sh --testbed --check": f"asks ansible what it would change on the testbed ({_TESTBED})",
    (
        "./setup.sh --testbed --openwhisk-only --set invoker_user_memory=16384m --set limit_action_memory_max=4096m"
    ): f"redeploys the testbed's OpenWhisk ({_TESTBED})",
    "FAASPROF_INVENTORY=local/inventory.ini ./setup.sh --testbed": f"two servers: {_TESTBED}",
    "faasprof run faasprof/workload_configs/first_run_modes.json --hosts local/inventory.ini": (
        "needs the two servers of the inventory; tests/test_hosts_docker.py runs --hosts against containers"
    ),
    # docs/plugins.md
    "faasprof run first_run_modes --analyze": (
        "minutes (a capacity search, then three 10-second phases); tests/test_shipped_workloads.py runs a shipped "
        "workload by its bare name"
    ),
    # docs/traces.md
    "faasprof run study/n200/workload.json --analyze": (
        "a 31-minute run (1860 s; on the generated day of tests/test_trace_sample.py, which runs the lines before "
        "it, about 480,000 invocations); tests/test_trace_fidelity.py runs a short generated sample with its report"
    ),
    # docs/out-of-core.md
    ".venv/bin/python bench/bench_engine.py --rows 10000000,100000000 --memory 1GB --check": (
        "a benchmark of minutes over 100 million generated rows; tests/test_analyzer_engine.py checks the engine's figures"
    ),
    ".venv/bin/python bench/bench_analyzer.py --rows 1000000,10000000 --keep /tmp/bench-analyzer": (
        "a benchmark of minutes (it generates ten million invocations and their records, then analyses them); "
        "tests/test_analyzer_engine.py and tests/test_analyzer_compare.py check the figures it times"
    ),
    ".venv/bin/python bench/bench_engine.py --analyzer-rows 1000000 --keep /tmp/bench-engine": (
        "a benchmark of a million generated invocations analysed twice; tests/test_analyzer_engine.py holds the "
        "engine's figures to the in-memory statistics"
    ),
    ".venv/bin/python bench/bench_analyzer.py --rows 1000000,10000000 --engine memory --only-analyze --keep /tmp/bench-analyzer": (
        "a benchmark of minutes; tests/test_analyzer_outofcore.py holds both paths' figures equal"
    ),
    ".venv/bin/python bench/bench_analyzer.py --rows 1000000,10000000 --engine outofcore --only-analyze --keep /tmp/bench-analyzer": (
        "a benchmark of minutes; tests/test_analyzer_outofcore.py holds both paths' figures equal"
    ),
    ".venv/bin/python bench/bench_figures.py --source /tmp/bench-analyzer/analyze-10000000 --times 10 --keep /tmp/bench-figures": (
        "a benchmark of a quarter of an hour over 100 million rows; tests/test_analyzer_outofcore.py checks the figures"
    ),
    # docs/experiments.md
    "faasprof slowdown json_loads json_dumps nbody --repeat 6 --rounds 5": (
        "five passes of minutes; tests/test_reproduce_cli.py runs two rounds of the same code through reproduce --tiny"
    ),
    "faasprof interference --capacity-rps 12 --repeats 5": (
        "five 29 s runs with perf, minutes; tests/test_experiments_interference.py runs --repeats 2 on a 6 s workload"
    ),
    "faasprof capacity json_dumps": (
        "a search of up to 8 probe runs and 2 repeats at each end of its bracket (capacity.SEARCH_DEFAULTS), each "
        "a 2 s run after its warm-up, analysed: minutes on 2 cores; tests/test_capacity_interrupt.py starts this "
        "command (with --out) and interrupts it in a probe, tests/test_capacity_localwhisk.py runs whole searches "
        "with a low --max-rate"
    ),
    "faasprof reproduce --quick": (
        "about 10 minutes on 2 cores (its --help says so): a capacity search, then every figure's experiment; "
        "tests/test_reproduce_cli.py runs --tiny on four figures, the openwhisk tier --quick on OpenWhisk"
    ),
    "faasprof sweep faasprof/workload_configs/stellar_image_size.json": (
        "builds Docker images padded with 50 and 200 MiB of incompressible filler and cold-starts each for 20 s; "
        "tests/test_stellar_image_size.py runs this workload with paddings of 0 and 4 MiB for 12 s"
    ),
    "python -m faasprof.experiments.io_study faasprof/workload_configs/io_concurrency_cost.json --out runs": (
        "three points of four bursts 5 s apart (a warm-up and 3 measured batches of 1, 4 and 8 downloads of 10 MB "
        "from versitygw): over a minute; tests/test_io_study.py runs a study of the same kind (4 points, 1 MB, "
        "1 s apart) and reads this workload's points"
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
