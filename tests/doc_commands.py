"""The command lines that the user's documents show (README.md and docs/*.md), and the one list of
those that no test runs, with the reason.

A command line is a line of a fenced ```sh block: a trailing ``\\`` joins the next line, and a
comment after two spaces and ``#`` is cut. Every one is either run by a test, which gets it through
``shown(line)`` (so the test runs what the documents show, and fails once they stop showing it),
or listed in ``NOT_RUN``. ``tests/test_docs.py`` holds every document to that, and checks every
flag and path the documents show.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Blocks of these languages hold command lines; the others hold files or output, never commands.
COMMAND_LANGUAGES = frozenset({"sh"})
OTHER_LANGUAGES = frozenset({"json", "ini", "python", "text", "toml"})


_SUITE = "it runs the test suite itself, which no test of the suite can"
_CHECKOUT = "./setup.sh installs system packages on a fresh machine; .ci/run runs ./setup.sh --dev on a clean clone"
_OPENWHISK_BUILD = "builds OpenWhisk 2.0.0 from source (JDK 17, Maven, Docker)"
_AZURE = "needs the Azure Functions 2019 dataset's files, which are not downloadable here"
_PLACEHOLDER_RUNS = (
    "names the reader's own workloads and runs; tests/test_repeats.py and tests/test_run_level_compare.py run "
    "these commands on workloads and runs of their own"
)
_TESTBED = "deploys OpenWhisk with ansible on a bare-metal Ubuntu server with sudo"

NOT_RUN: dict[str, str] = {
    # README.md
    "./setup.sh && .venv/bin/faasprof run faasprof/workload_configs/first_run_modes.json --analyze": (
        f"{_CHECKOUT}; the run takes minutes (a capacity search, then three 15-second phases), over the suite's "
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
    (
        ".venv/bin/python -m faasprof.monitoring.collectors --write && "
        ".venv/bin/python -m faasprof.invoker.schema_doc --write"
    ): (
        "writes into the checkout; tests/test_readme.py and tests/test_monitoring_registry.py check that the guides "
        "hold what it writes and run each --write on a copy"
    ),
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
    "pip install examples/faasprof-example-plugin": (
        "installs into the venv faasprof runs from; tests/test_plugin_install.py installs it into a fresh venv and runs "
        "doctor, validate, run and analyze there"
    ),
    "faasprof validate sawtooth_loadavg.json": "the plug-in's workload, run by tests/test_plugin_install.py",
    "faasprof run sawtooth_loadavg.json --analyze": "the plug-in's workload, run by tests/test_plugin_install.py",
    "faasprof run first_run_modes --analyze": (
        "minutes (a capacity search, then three 15-second phases); tests/test_shipped_workloads.py runs a shipped "
        "workload by its bare name"
    ),
    # docs/traces.md
    "tar -xJf azurefunctions-dataset2019.tar.xz": _AZURE,
    (
        "faasprof trace sample azurefunctions-dataset2019/*d01.csv -n 200 --minutes 600-629 --seed 1 --out study/n200"
    ): f"{_AZURE}; tests/test_trace_sample.py samples a generated day in the same layout",
    "faasprof validate study/n200/workload.json": f"{_AZURE}; tests/test_trace_sample.py validates a generated sample",
    "faasprof plan study/n200/workload.json": f"{_AZURE}; tests/test_trace_sample.py plans a generated sample",
    "faasprof run study/n200/workload.json --analyze": (
        f"{_AZURE}, and a 30-minute run; tests/test_trace_fidelity.py runs a generated sample with its report"
    ),
    # docs/out-of-core.md
    ".venv/bin/python bench/bench_engine.py --rows 10000000,100000000 --memory 2GB --check": (
        "a benchmark of minutes over 100 million generated rows; tests/test_analyzer_engine.py checks the engine's figures"
    ),
    # docs/statistics.md
    "faasprof run A.json --vs B.json --repeats 5": _PLACEHOLDER_RUNS,
    "faasprof run A.json --vs B.json --repeats 5 --order shuffled --order-seed 3": _PLACEHOLDER_RUNS,
    "faasprof compare runs/repeats-TIME": _PLACEHOLDER_RUNS,
    "faasprof compare A1 A2 A3 -- B1 B2 B3": _PLACEHOLDER_RUNS,
    "faasprof compare --a A1 A2 A3 --b B1 B2 B3": _PLACEHOLDER_RUNS,
    "faasprof compare runs/repeats-ONE -- runs/repeats-OTHER": _PLACEHOLDER_RUNS,
    "faasprof sweep sweep.json --repeats 5": _PLACEHOLDER_RUNS,
    # docs/experiments.md
    "faasprof capacity json_dumps": "a search of minutes over short runs; tests/test_capacity*.py search on fakes",
    "faasprof reproduce --quick": "minutes, a capacity search included; the openwhisk tier runs it on OpenWhisk",
    "faasprof slowdown json_loads json_dumps nbody --repeat 6 --rounds 5": (
        "five passes of minutes; tests/test_reproduce_cli.py runs two rounds of the same code through reproduce --tiny"
    ),
    "faasprof interference --capacity-rps 12 --repeats 5": (
        "five 29 s runs with perf, minutes; tests/test_experiments_interference.py runs --repeats 2 on a 6 s workload"
    ),
    "faasprof run faasprof/workload_configs/stellar_chain_smoke.json --analyze": (
        "needs the storage extra (versitygw, ./setup.sh --with storage) and minutes of chains"
    ),
    "faasprof sweep faasprof/workload_configs/stellar_image_size.json": (
        "needs Docker and builds padded images of up to 200 MiB"
    ),
    "python -m faasprof.experiments.io_study faasprof/workload_configs/io_concurrency_cost.json --out runs": (
        "needs the storage extra (versitygw) and minutes of batches"
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
