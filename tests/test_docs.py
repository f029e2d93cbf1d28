"""The user's documents (README.md and docs/*.md) stay true: every command line they show is run
here or by another test, or listed with the reason in ``tests/doc_commands.py``; every flag they
show is one its command takes; every path they name exists; code is only in fenced blocks that
name their language."""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import subprocess
import sys
from functools import cache

import pytest

from faasprof.cli import COMMANDS, build_parser
from tests.doc_commands import (
    COMMAND_LANGUAGES,
    NOT_RUN,
    OTHER_LANGUAGES,
    REPO_ROOT,
    command_lines,
    documents,
    fenced_blocks,
    shown,
    shown_commands,
    substituted,
)

DOCUMENT_IDS = [path.relative_to(REPO_ROOT).as_posix() for path in documents()]
# Docker image names look like paths under faasprof/ but name images, not files.
IMAGE_NAME = re.compile(r"^faasprof/(test-host|action-[\w.-]+|stellar-padded-python)(:|$)")
PATH_ROOTS = ("faasprof/", "setup/", "tests/", "bench/", "docs/", ".ci/")


RUNNERS = {"shown", "run_shown", "sh_shown"}  # called with a shown line as a literal, they run it


def run_by_tests() -> dict[str, list[str]]:
    """Each literal ``shown("...")`` (or ``run_shown``, ``sh_shown``) in the test files, with the files that run it."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO_ROOT / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and (getattr(node.func, "id", None) in RUNNERS or getattr(node.func, "attr", None) in RUNNERS)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.setdefault(node.args[0].value, []).append(path.name)
    return found


def test_command_lines_join_continuations_and_cut_comments():
    block = ["a --x 1 \\", "  && b   # what b does", "", "c # not a comment without two spaces"]
    assert command_lines(block) == ["a --x 1 && b", "c # not a comment without two spaces"]
    assert fenced_blocks("x\n```sh\nls\n```\n```json\n{}\n```\n") == [("sh", ["ls"]), ("json", ["{}"])]


def test_every_shown_command_is_run_by_a_test_or_listed_as_not_run():
    run = run_by_tests()
    lines = {command.line for command in shown_commands()}
    neither = sorted(f"{c.document}: {c.line}" for c in shown_commands() if c.line not in run and c.line not in NOT_RUN)
    assert neither == [], "run each in a test through doc_commands.shown(...), or add it to NOT_RUN with the reason"
    both = sorted(line for line in run if line in NOT_RUN)
    assert both == [], "a test runs these: take them out of NOT_RUN"
    assert sorted(set(NOT_RUN) - lines) == [], "NOT_RUN lists commands no document shows any more"
    assert sorted(set(run) - lines) == [], "tests run commands no document shows any more"
    assert all(reason.strip() for reason in NOT_RUN.values())


def test_the_long_tiers_lines_count_as_run_and_only_the_testbed_is_not_run():
    """tests/test_docs_long.py (-m docs_long) runs the lines of minutes, ./setup.sh, the suite and
    the lint: the literal scan sees them there, so none of them stays in NOT_RUN."""
    run = run_by_tests()
    for line in (
        "faasprof reproduce --quick",
        "./setup.sh --dev && .venv/bin/python -m pytest -q",
        ".ci/lint",
        "./setup.sh --openwhisk --source OPENWHISK_2.0.0_EXPORT",
    ):
        assert run.get(line) == ["test_docs_long.py"], line
    assert all("bare-metal" in reason or "two servers" in reason for reason in NOT_RUN.values())


def test_a_placeholder_is_replaced_as_a_whole_word_and_must_be_in_the_line():
    line = "faasprof compare runs/repeats-TIME"
    assert substituted(line, {"TIME": "20261128T1"}) == "faasprof compare runs/repeats-20261128T1"
    with pytest.raises(AssertionError, match="'TIME' is not a placeholder of 'faasprof compare TIMES'"):
        substituted("faasprof compare TIMES", {"TIME": "x"})


@pytest.mark.parametrize("document", DOCUMENT_IDS)
def test_code_is_in_fenced_blocks_that_name_their_language(document):
    text = (REPO_ROOT / document).read_text(encoding="utf-8")
    languages = {language for language, _ in fenced_blocks(text)}
    assert languages <= COMMAND_LANGUAGES | OTHER_LANGUAGES, f"{document}: name one of those languages after ```"
    assert text.count("\n```") % 2 == 0, f"{document}: a fence is not closed"
    # An indented block would hold commands that no test sees: fence it instead.
    outside = re.sub(r"\n```.*?\n```", "\n", "\n" + text, flags=re.S)
    indented = re.findall(r"\n\n( {4,}\S.*)", outside)
    assert indented == [], f"{document}: fence these as ```sh (or another language): {indented}"


def _subcommand_options(words: list[str]) -> tuple[str, set[str]]:
    """The subcommand that ``faasprof WORDS...`` names (``local start`` for local) and its options."""
    sub = words[0]
    parser = build_parser(only=sub)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen = action.choices[sub]
    name = sub
    nested = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
    if nested and len(words) > 1 and words[1] in nested[0].choices:
        chosen, name = nested[0].choices[words[1]], f"{sub} {words[1]}"
    return name, {option for a in chosen._actions for option in a.option_strings}


@cache
def _help_text(program: tuple[str, ...]) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [*program, "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, f"{' '.join(program)} --help: {done.stderr[-500:]}"
    return done.stdout


def _simple_commands(line: str) -> list[list[str]]:
    """The simple commands of a line (split at &&, ;, |), without leading VAR=value words."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in {"&&", ";", "||", "|"}:
            commands.append([])
        elif commands[-1] or not re.match(r"^[A-Z_]+=", token):
            commands[-1].append(token)
    return [command for command in commands if command]


def _flag_problems(words: list[str]) -> list[str]:
    """What a shown command names that its program does not take (long options only)."""
    flags = [w.split("=")[0] for w in words[: words.index("--") if "--" in words else None] if w.startswith("--")]
    program = words[0]
    if program in {"faasprof", ".venv/bin/faasprof"}:
        rest = [w for w in words[1:] if not w.startswith("-")]
        if not rest or rest[0] not in COMMANDS:
            return [f"faasprof has no command {rest[:1]}"]
        name, options = _subcommand_options(rest)
        return [f"faasprof {name} has no {flag}" for flag in flags if flag not in options]
    if program in {"python", ".venv/bin/python"} and words[1] == "-m":
        help_text = _help_text((sys.executable, "-m", words[2]))
    elif program in {"python", ".venv/bin/python"} and words[1].startswith("bench/"):
        help_text = _help_text((sys.executable, str(REPO_ROOT / words[1])))
    elif program.startswith("./") or program.startswith(".ci/"):
        help_text = _help_text((str(REPO_ROOT / program),)) if flags else ""
    elif program in {"pip", "tar"} and not flags:
        return []  # pip install PATH, tar -xJf FILE: their own words, no flag of ours to check
    else:
        return [f"{program}: no rule to check its flags"]
    return [
        f"{program} has no {flag}"
        for flag in flags
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text)
    ]


@pytest.mark.parametrize("document", DOCUMENT_IDS)
def test_every_flag_a_shown_command_uses_exists(document):
    problems = []
    for command in shown_commands():
        if command.document == document:
            for words in _simple_commands(command.line):
                if words[0] != "pytest" and words[-2:] != ["-m", "pytest"] and "pytest" not in words[:3]:
                    problems += [f"{command.line}: {p}" for p in _flag_problems(words)]
    assert problems == []


INLINE_FAASPROF = re.compile(r"`(?:\.venv/bin/)?faasprof ([a-z]+)((?:[^`])*)`")


@pytest.mark.parametrize("document", DOCUMENT_IDS)
def test_every_command_and_flag_named_in_the_prose_exists(document):
    """`faasprof CMD ... --flag` in running text and tables: CMD is a command and takes --flag."""
    text = re.sub(r"\n```.*?\n```", "\n", (REPO_ROOT / document).read_text(encoding="utf-8"), flags=re.S)
    problems = []
    for sub, rest in INLINE_FAASPROF.findall(text):
        if sub not in COMMANDS:
            problems.append(f"`faasprof {sub}{rest}`: no such command")
            continue
        words = [sub, *rest.replace("\\|", " ").replace("[", " ").replace("]", " ").split()]
        name, options = _subcommand_options([w for w in words if not w.startswith("-")])
        flags = re.findall(r"--[a-z][a-z0-9-]*", rest)
        problems += [f"`faasprof {sub}{rest}`: faasprof {name} has no {flag}" for flag in flags if flag not in options]
    assert problems == []


def _named_paths(document: str, text: str) -> list[str]:
    """Files of the checkout the document names: link targets, and paths in code spans and commands."""
    base = (REPO_ROOT / document).parent
    named = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"^[a-z]+:", target):
            named.append((base / target).resolve().relative_to(REPO_ROOT).as_posix())
    for token in re.findall(r"[\w.][\w./{},-]*", " ".join(re.findall(r"`([^`\n]+)`", text)) + "\n" + text):
        token = token.rstrip(".,;:")
        if token.startswith(PATH_ROOTS) and not IMAGE_NAME.match(token):
            named.append(token)
    return named


@pytest.mark.parametrize("document", DOCUMENT_IDS)
def test_every_path_named_exists(document):
    text = (REPO_ROOT / document).read_text(encoding="utf-8")
    missing = []
    for name in sorted(set(_named_paths(document, text))):
        if "{" in name:  # setup/openwhisk-standalone/{build,start,stop}.sh: each of them
            head, _, rest = name.partition("{")
            choices, _, tail = rest.partition("}")
            names = [head + choice + tail for choice in choices.split(",")]
        else:
            names = [name]
        missing += [n for n in names if not (REPO_ROOT / n).exists()]
    assert missing == [], f"{document} names paths that do not exist"


def test_a_missing_path_or_flag_is_found():
    """The checks above can fail: a stale path and an unknown flag are reported."""
    assert "faasprof/workload_configs/json_dumps.json" in _named_paths(
        "docs/platforms.md", "`faasprof/workload_configs/json_dumps.json`"
    )
    assert not (REPO_ROOT / "faasprof/workload_configs/json_dumps.json").exists()
    assert _flag_problems(["faasprof", "local", "start", "--no-such-flag", "4096"]) == [
        "faasprof local start has no --no-such-flag"
    ]
    assert _flag_problems(["faasprof", "no-such-command"]) == ["faasprof has no command ['no-such-command']"]
    assert _flag_problems(["faasprof", "run", "W.json", "--user-memory", "4096"]) == []


# The commands the guides show that run here, in a scratch folder that sees the checkout's
# folders (the commands name paths relative to it) and keeps HOME, the cache and outputs apart.


@pytest.fixture
def scratch(tmp_path):
    for name in ("faasprof", "tests"):
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("WSK_CONFIG_FILE", None)
    env.pop("FAASPROF_CACHE_DIR", None)
    return tmp_path, env


def run_shown(line: str, scratch, timeout: float = 120, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Runs a shown ``faasprof ...`` line as the user would, with ``python -m faasprof`` for ``faasprof``."""
    words = shown(line)
    assert words[0] == "faasprof", line
    folder, env = scratch
    return subprocess.run(
        [sys.executable, "-m", "faasprof", *words[1:], *extra],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_workloads_guide_validates_and_plans_the_sample(scratch):
    done = run_shown("faasprof validate faasprof/workload_configs/paper_listing1.json", scratch)
    assert done.returncode == 0, done.stderr
    assert "paper_listing1.json: ok (3 instances, 25 s" in done.stdout + done.stderr
    done = run_shown("faasprof plan faasprof/workload_configs/paper_listing1.json --out schedule.csv --seed 7", scratch)
    assert done.returncode == 0, done.stderr
    schedule = (scratch[0] / "schedule.csv").read_text(encoding="utf-8").splitlines()
    assert "seed 7" in done.stdout + done.stderr and len(schedule) > 1000


@pytest.mark.slow  # doctor probes the host: seconds
def test_the_monitoring_guide_parses_a_recorded_perf_stat_and_asks_the_doctor(scratch):
    done = run_shown(
        "faasprof parse perf tests/data/monitoring/perf/perf_stat_system_interval.csv --out tidy.csv", scratch
    )
    assert done.returncode == 0, done.stderr
    tidy = (scratch[0] / "tidy.csv").read_text(encoding="utf-8").splitlines()
    assert len(tidy) > 1 and "instructions" in "\n".join(tidy)
    for done in (
        run_shown("faasprof doctor", scratch),
        run_shown("faasprof doctor --workload faasprof/workload_configs/first_run_modes.json", scratch),
    ):
        assert done.returncode == 0, f"{done.args}: {done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr and "cgroups" in done.stdout


HELLO = 'def main(args):\n    return {"greeting": "hello " + str(args.get("name", "world"))}\n'
MYFUNC = 'def main(args):\n    return {"size": int(args.get("size", 0)) * 2}\n'


@pytest.mark.slow
def test_the_platform_and_function_guides_commands_on_a_background_localwhisk(scratch):
    """docs/platforms.md's `local start` ... `local stop` and docs/workloads.md's deploys and native
    runs, in order, against one background localwhisk. `local start` gets `--port 0`: its default
    port, 3233, is OpenWhisk standalone's, which a test running beside this one may hold."""
    folder, _ = scratch
    (folder / "hello.py").write_text(HELLO, encoding="utf-8")
    (folder / "myfunc").mkdir()
    (folder / "myfunc" / "__main__.py").write_text(MYFUNC, encoding="utf-8")
    started = run_shown(
        "faasprof local start --user-memory-mb 4096 --pause-grace-ms 50", scratch, extra=("--port", "0")
    )
    assert started.returncode == 0, started.stderr
    try:
        steps = [
            (run_shown("faasprof deploy hello.py", scratch), "hello"),
            (run_shown("faasprof deploy --list", scratch), "json_dumps"),
            (run_shown("faasprof deploy markdown markdown-256", scratch), "markdown-256"),
            (
                run_shown(
                    "faasprof deploy ./myfunc --name myfunc --memory 512 --timeout 30000 --param size 100", scratch
                ),
                "myfunc",
            ),
            (run_shown("faasprof local status", scratch), "memory 0/4096 MB"),  # as started: 4096 MB
            (run_shown("faasprof native ./myfunc --repeat 20", scratch, timeout=180), ""),
            (run_shown("faasprof native nbody --repeat 20 --concurrency 2", scratch, timeout=180), ""),
        ]
        for done, expected in steps:
            assert done.returncode == 0, f"{done.args}: {done.stderr[-2000:]}"
            assert expected in done.stdout + done.stderr, f"{done.args}: {done.stdout[-2000:]}"
    finally:
        stopped = run_shown("faasprof local stop", scratch)
    assert stopped.returncode == 0, stopped.stderr


def test_the_plugins_guide_reaches_the_shipped_workloads_by_name(scratch):
    folder = scratch[0]
    done = run_shown("faasprof validate first_run_modes", scratch)
    assert done.returncode == 0 and "first_run_modes.json: ok" in done.stdout + done.stderr, done.stderr
    done = run_shown("faasprof examples", scratch)
    assert done.returncode == 0 and "first_run_modes" in done.stdout, done.stderr
    done = run_shown("faasprof examples copy first_run_modes", scratch)
    assert done.returncode == 0 and (folder / "first_run_modes.json").is_file(), done.stderr
    done = run_shown("faasprof examples copy first_run_modes my_modes.json", scratch)
    assert done.returncode == 0 and (folder / "my_modes.json").is_file(), done.stderr


def test_every_long_test_that_runs_pytest_inside_holds_no_host_lock():
    """A docs_long test that runs a suite inside must be marked nested_suite (tests/conftest.py
    then takes no host lock for it): holding it, the inner suite's first host_exclusive test
    waited for the outer test for ever, and every session on the host behind it."""
    tree = ast.parse((REPO_ROOT / "tests" / "test_docs_long.py").read_text(encoding="utf-8"))
    unmarked = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            texts = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            markers = {ast.unparse(d) for d in node.decorator_list}
            if any("-m pytest" in text for text in texts) and "pytest.mark.nested_suite" not in markers:
                unmarked.append(node.name)
    assert unmarked == []
