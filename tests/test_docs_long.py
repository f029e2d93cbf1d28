"""The documents' command lines that run for minutes, or run the suite, the lint or ./setup.sh
themselves: each run AS SHOWN (``doc_commands.sh_shown``), each with checks of what it wrote.

Marked ``docs_long``: left out of every tier unless a -m expression names it (tests/conftest.py,
as ``hardware`` and ``openwhisk`` are). Run one test at a time, in one process:

    .venv/bin/python -m pytest -m docs_long -n 0 tests/test_docs_long.py::test_x --durations=0

The ``faasprof ...`` lines run in a scratch folder that sees the checkout's ``faasprof/`` (the
documents name paths relative to the checkout), under a HOME of their own (the capacity they
measure is stored there, never in yours) and with the faasprof cache of the suite (the function
archives, the runtime images' padding). The README's ``./setup.sh && ...`` lines, the suite's own
command lines and ``.ci/lint`` run in a fresh ``git clone`` of this checkout's HEAD (commit first
what you want them to see), so ./setup.sh really runs there and makes the clone's ``.venv``. The
OpenWhisk lines need the build of ``./setup.sh --openwhisk`` (and skip with one line without it).
docs/development.md lists each test's time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from faasprof.docker import docker_problem
from faasprof.monitoring.collectors import build_collectors
from faasprof.paths import find_binary
from faasprof.platforms.openwhisk.standalone import HOME_ENV, standalone_home
from faasprof.workload.trace_synth import write_day
from tests.doc_commands import REPO_ROOT, sh_shown
from tests.helpers import clean_clone

pytestmark = pytest.mark.docs_long

MINUTE_S = 60
# The build of ./setup.sh --openwhisk the OpenWhisk lines use (the suite's HOME is not the user's:
# the build is found where the user's cache keeps it, as the openwhisk tier finds it).
OPENWHISK_BUILD = standalone_home()


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a shown line: a HOME of its own, no wsk config, ``extra`` on top."""
    env = {**os.environ, "HOME": str(home), **extra}
    env.pop("WSK_CONFIG_FILE", None)
    env.pop("FAASPROF_TEST_HOME", None)
    return env


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A folder where the documents' paths (``faasprof/...``) are the checkout's, and its env."""
    for name in ("faasprof", "tests", "bench"):
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    home = tmp_path / "home"
    home.mkdir()
    # The guides' `faasprof` and `python` are those of the venv, as in a shell where it is active;
    # the benchmarks' temporary folders go under the scratch folder, removed with it.
    venv_path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    yield tmp_path, _env(home, PYTHONPATH=str(REPO_ROOT), TMPDIR=str(tmp_path), PATH=venv_path)
    shutil.rmtree(tmp_path, ignore_errors=True)  # gigabytes of generated rows and runs


def _out_dir(done: subprocess.CompletedProcess[str], cwd: Path) -> Path:
    """The folder a command names on the last line of its stdout (run, sweep, reproduce...)."""
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    folder = cwd / done.stdout.strip().splitlines()[-1]
    assert folder.is_dir(), f"the last line of stdout is no folder: {done.stdout[-1000:]}"
    return folder


def _json(path: Path) -> dict:
    assert path.is_file(), f"{path} was not written"
    return json.loads(path.read_text(encoding="utf-8"))


def _check_analyzed_run(run_dir: Path, phases: int) -> dict:
    """An analysed, complete run: its report, and a summary whose invocations reconcile (planned =
    the outcomes counted; the records found and missing = the invocations with an activation id)."""
    summary = _json(run_dir / "analysis" / "summary.json")
    assert (run_dir / "analysis" / "report.html").is_file()
    run, records = summary["run"], summary["records"]
    assert run["status"] == "complete" and len(run["phases"]) == phases, run["status"]
    assert run["planned"] == sum(run["outcomes"].values()) > 0, run["outcomes"]
    assert records["found"] > 0 and records["found"] + records["missing"] == records["with_activation_id"], records
    return summary


# --- faasprof's own long commands (docs/capacity.md, experiments.md, plugins.md, traces.md) ---


@pytest.mark.timeout(20 * MINUTE_S)
def test_capacity_json_dumps(scratch):
    folder, env = scratch
    done = sh_shown("faasprof capacity json_dumps", folder, env=env, timeout=20 * MINUTE_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "json_dumps: capacity" in done.stdout and "probes" in done.stdout, done.stdout
    store = _json(Path(env["HOME"]) / ".local" / "share" / "faasprof" / "capacity.json")
    assert "json_dumps" in json.dumps(store), "the capacity was not stored for this host"


@pytest.mark.timeout(30 * MINUTE_S)
def test_reproduce_quick(scratch):
    folder, env = scratch
    done = sh_shown("faasprof reproduce --quick", folder, env=env, timeout=30 * MINUTE_S)
    out = _out_dir(done, folder)
    doc = _json(out / "reproduce.json")
    assert doc["kind"] == "reproduce" and doc["format_version"] == 1 and doc["profile"] == "quick"
    figures = {figure["figure"]: figure for figure in doc["figures"]}
    assert {"4", "5", "15", "16"} <= set(figures), sorted(figures)
    assert sum(doc["summary"].values()) == len(doc["figures"])  # every figure counted once
    for key in ("4", "5", "15", "16"):
        assert figures[key]["verdict"] != "not measurable", figures[key]
        assert f"Fig {key} (" in done.stdout
        assert all((out / run_dir).is_dir() for run_dir in figures[key]["run_dirs"])
    report = (out / "report.html").read_text(encoding="utf-8")
    assert all(f"id='fig{key}'" in report for key in figures)


@pytest.mark.timeout(30 * MINUTE_S)
def test_slowdown_five_rounds(scratch):
    folder, env = scratch
    done = sh_shown(
        "faasprof slowdown json_loads json_dumps nbody --repeat 6 --rounds 5", folder, env=env, timeout=30 * MINUTE_S
    )
    out = _out_dir(done, folder)
    assert out.name.startswith("slowdown-rounds-")
    rounds = _json(out / "rounds.json")
    assert rounds["format_version"] == 1 and len(rounds["rounds"]) == 5
    assert all((out / name).is_dir() for name in rounds["rounds"])
    functions = {entry["function"]: entry for entry in rounds["functions"]}
    assert set(functions) == {"json_loads", "json_dumps", "nbody"}
    assert all(entry["rounds"] == 5 and entry["factor"] > 0 for entry in functions.values()), functions
    for name in ("json_loads", "json_dumps", "nbody"):
        assert name in done.stdout


@pytest.mark.timeout(20 * MINUTE_S)
def test_interference_five_repeats(scratch):
    folder, env = scratch
    done = sh_shown("faasprof interference --capacity-rps 12 --repeats 5", folder, env=env, timeout=20 * MINUTE_S)
    out = _out_dir(done, folder)
    result = _json(out / "interference_repeats.json")
    assert result["format_version"] == 1 and len(result["runs"]) == 5
    assert "over 5 runs" in done.stdout and "during the aggressor against before it" in done.stdout


@pytest.mark.timeout(30 * MINUTE_S)
def test_stellar_image_size_sweep(scratch):
    problem = docker_problem()
    if problem is not None:
        pytest.skip(f"the sweep runs under docker isolation: {problem}")
    folder, env = scratch
    done = sh_shown("faasprof sweep faasprof/workload_configs/stellar_image_size.json", folder, env=env, timeout=1800)
    out = _out_dir(done, folder)
    sizes = _json(out / "cold_start_vs_size.json")
    assert (out / "cold_start_vs_size.csv").is_file() and (out / "report.html").is_file()
    text = json.dumps(sizes)
    assert all(f'"image_padding_mb": {mb}' in text for mb in (0, 50, 200)), text[:2000]


@pytest.mark.timeout(15 * MINUTE_S)
def test_io_concurrency_study(scratch):
    if find_binary("versitygw") is None:
        pytest.skip("the study downloads from versitygw: ./setup.sh --with storage installs it")
    folder, env = scratch
    done = sh_shown(
        "python -m faasprof.experiments.io_study faasprof/workload_configs/io_concurrency_cost.json --out runs",
        folder,
        env=env,
        timeout=15 * MINUTE_S,
    )
    out = _out_dir(done, folder)
    study = _json(out / "io_study.json")
    assert len(study["points"]) == 3, study
    for name in ("io_study.csv", "io_bandwidth.png", "io_cost_response.png"):
        assert (out / name).is_file(), name


@pytest.mark.timeout(20 * MINUTE_S)
def test_the_shipped_main_job_by_its_bare_name(scratch):
    folder, env = scratch
    done = sh_shown("faasprof run first_run_modes --analyze", folder, env=env, timeout=20 * MINUTE_S)
    summary = _check_analyzed_run(_out_dir(done, folder), phases=3)
    assert summary["run"]["test_name"] == "first_run_modes"
    assert [instance["instance"] for instance in summary["instances"]] == ["under", "balanced", "over"]


@pytest.mark.timeout(60 * MINUTE_S)
def test_the_trace_guides_31_minute_run(scratch):
    """docs/traces.md's lines from the archive to the run, on a made-up day in the 2019 layout."""
    folder, env = scratch
    write_day(folder / "azurefunctions-dataset2019", functions=600, seed=11)
    packed = subprocess.run(
        ["tar", "-cJf", "azurefunctions-dataset2019.tar.xz", "azurefunctions-dataset2019"], cwd=folder, check=False
    )
    assert packed.returncode == 0
    shutil.rmtree(folder / "azurefunctions-dataset2019")
    for line in (
        "tar -xJf azurefunctions-dataset2019.tar.xz",
        "faasprof trace sample azurefunctions-dataset2019/*d01.csv -n 200 --minutes 600-629 --seed 1 --out study/n200",
    ):
        done = sh_shown(line, folder, env=env, timeout=10 * MINUTE_S)
        assert done.returncode == 0, f"{line}: {done.stderr[-3000:]}"
    done = sh_shown("faasprof run study/n200/workload.json --analyze", folder, env=env, timeout=50 * MINUTE_S)
    run_dir = _out_dir(done, folder)
    summary = _check_analyzed_run(run_dir, phases=1)
    assert summary["run"]["planned"] > 100_000, summary["run"]["manifest_counts"]
    assert (run_dir / "analysis" / "trace_fidelity.json").is_file()


# --- bench lines (docs/out-of-core.md): their folders under the scratch folder ---


@pytest.mark.timeout(40 * MINUTE_S)
def test_bench_engine_at_ten_and_a_hundred_million_rows(scratch):
    folder, env = scratch
    done = sh_shown(
        ".venv/bin/python bench/bench_engine.py --rows 10000000,100000000 --memory 1GB --check",
        REPO_ROOT,
        env=env,
        timeout=40 * MINUTE_S,
    )
    out = _stdout(done)
    for rows in ("10,000,000", "100,000,000"):
        assert f"engine, {rows} rows, memory_limit 1GB:" in out, out
    assert out.count("check against the in-memory statistics: equal") == 2, out


def _stdout(done: subprocess.CompletedProcess[str]) -> str:
    """A benchmark's stdout, once it exited 0."""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.timeout(40 * MINUTE_S)
def test_bench_analyzer_at_one_and_ten_million(scratch):
    folder, env = scratch
    kept = folder / "bench-analyzer"  # the --keep folder the guide puts in /tmp: here, the scratch folder's
    out = _stdout(
        sh_shown(
            ".venv/bin/python bench/bench_analyzer.py --rows 1000000,10000000 --keep /tmp/bench-analyzer",
            REPO_ROOT,
            env=env,
            substitute={"/tmp/bench-analyzer": str(kept)},
            timeout=40 * MINUTE_S,
        )
    )
    for rows in ("1,000,000", "10,000,000"):
        assert f"analyze, {rows} invocations:" in out, out
    assert "growth 1,000,000 -> 10,000,000 invocations" in out and "missing 0" in out, out
    assert len(list(kept.glob("analyze-*/bench-*"))) == 2  # --keep kept both runs


@pytest.mark.timeout(40 * MINUTE_S)
def test_bench_engine_against_analyze(scratch):
    folder, env = scratch
    kept = folder / "bench-engine"
    out = _stdout(
        sh_shown(
            ".venv/bin/python bench/bench_engine.py --analyzer-rows 1000000 --keep /tmp/bench-engine",
            REPO_ROOT,
            env=env,
            substitute={"/tmp/bench-engine": str(kept)},
            timeout=40 * MINUTE_S,
        )
    )
    assert "analyze's phase_stats vs the engine, 1,000,000 invocations: 240 figures compared" in out, out
    assert ", 0 differ" in out and any(kept.glob("analyzer-1000000/bench-*")), out


@pytest.mark.timeout(60 * MINUTE_S)
def test_bench_analyzer_in_memory_then_out_of_core_then_the_figures_alone(scratch):
    """docs/out-of-core.md's three lines in order: the same generated runs analysed both ways, then
    the ten-million-row run repeated to 100 million for the figures alone."""
    folder, env = scratch
    kept, figures = folder / "bench-analyzer", folder / "bench-figures"
    paths = {"/tmp/bench-analyzer": str(kept)}
    in_memory = sh_shown(
        ".venv/bin/python bench/bench_analyzer.py --rows 1000000,10000000 --engine memory --only-analyze "
        "--keep /tmp/bench-analyzer",
        REPO_ROOT,
        env=env,
        substitute=paths,
        timeout=40 * MINUTE_S,
    )
    out_of_core = sh_shown(
        ".venv/bin/python bench/bench_analyzer.py --rows 1000000,10000000 --engine outofcore --only-analyze "
        "--keep /tmp/bench-analyzer",
        REPO_ROOT,
        env=env,
        substitute=paths,
        timeout=40 * MINUTE_S,
    )
    for out in (_stdout(in_memory), _stdout(out_of_core)):
        for rows in ("1,000,000", "10,000,000"):
            assert f"{rows} invocations:" in out and "missing 0" in out, out
    out = _stdout(
        sh_shown(
            ".venv/bin/python bench/bench_figures.py --source /tmp/bench-analyzer/analyze-10000000 --times 10 "
            "--keep /tmp/bench-figures",
            REPO_ROOT,
            env=env,
            substitute={
                "/tmp/bench-analyzer/analyze-10000000": str(kept / "analyze-10000000"),
                "/tmp/bench-figures": str(figures),
            },
            timeout=40 * MINUTE_S,
        )
    )
    assert "analyze out of core, figures alone, 100,000,000 invocations:" in out, out


@pytest.mark.timeout(40 * MINUTE_S)
def test_bench_rows_out_of_core_checked_against_load_run(scratch):
    folder, env = scratch
    out = _stdout(
        sh_shown(
            ".venv/bin/python bench/bench_analyzer.py --rows-only --rows 1000000,10000000 --check --keep /tmp/bench-rows",
            REPO_ROOT,
            env=env,
            substitute={"/tmp/bench-rows": str(folder / "bench-rows")},
            timeout=40 * MINUTE_S,
        )
    )
    for rows in ("1,000,000", "10,000,000"):
        assert f"row builder, {rows} invocations" in out, out


# --- in a fresh clone: ./setup.sh as the README shows it, the suite's own lines, the lint ---


def _clone_env(home: Path) -> dict[str, str]:
    """A user's shell in the clone: no PYTHONPATH (the clone's .venv imports the clone's faasprof)."""
    env = _env(home)
    for name in ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def clone() -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh clone of this checkout's HEAD and a HOME of its own, shared by the module's tests.
    Not under pytest's folder (mode 700): localwhisk's sandboxes run the clone's launcher as users
    of their own, which must reach it, as they reach a checkout."""
    folder = Path(tempfile.mkdtemp(prefix="faasprof-docs-clone-"))
    folder.chmod(0o755)
    home = folder / "home"
    home.mkdir()
    yield clean_clone(folder), _clone_env(home)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def dev_clone(clone) -> Iterator[tuple[Path, dict[str, str]]]:
    """The clone after ``./setup.sh --dev`` (the README's set-up for the tests), run once."""
    folder, env = clone
    if not (folder / ".venv" / "bin" / "pytest").exists():
        setup = subprocess.run(
            ["./setup.sh", "--dev"], cwd=folder, env=env, capture_output=True, text=True, timeout=1800, check=False
        )
        assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
    yield folder, env


def _pytest_summary(done: subprocess.CompletedProcess[str]) -> str:
    """pytest's last line (``N passed, M skipped in T s``), with no failure or error in it."""
    last = (done.stdout.strip().splitlines() or [""])[-1]
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert "failed" not in last and "error" not in last, last
    return last


@pytest.mark.timeout(30 * MINUTE_S)
def test_readme_quick_start_in_a_fresh_clone(clone):
    folder, env = clone
    done = sh_shown(
        "./setup.sh && .venv/bin/faasprof run faasprof/workload_configs/first_run_modes.json --analyze",
        folder,
        env=env,
        timeout=30 * MINUTE_S,
    )
    assert (folder / ".venv" / "bin" / "faasprof").is_file(), "./setup.sh made no .venv"
    summary = _check_analyzed_run(_out_dir(done, folder), phases=3)
    assert summary["run"]["test_name"] == "first_run_modes"


@pytest.mark.timeout(40 * MINUTE_S)
def test_readme_paper_listing1_in_a_fresh_clone(clone):
    folder, env = clone
    done = sh_shown(
        "./setup.sh && .venv/bin/faasprof run faasprof/workload_configs/paper_listing1.json --analyze",
        folder,
        env=env,
        timeout=40 * MINUTE_S,
    )
    summary = _check_analyzed_run(_out_dir(done, folder), phases=5)  # the activity windows' edges make 5
    assert [instance["instance"] for instance in summary["instances"]] == ["instance1", "instance2", "instance3"]


@pytest.mark.timeout(60 * MINUTE_S)
@pytest.mark.nested_suite
def test_the_whole_suite_as_ci_runs_it(clone):
    folder, env = clone
    done = sh_shown("./setup.sh --dev && .venv/bin/python -m pytest -q", folder, env=env, timeout=60 * MINUTE_S)
    assert " passed" in _pytest_summary(done)


@pytest.mark.timeout(20 * MINUTE_S)
@pytest.mark.nested_suite
def test_the_quick_tier(dev_clone):
    folder, env = dev_clone
    done = sh_shown('.venv/bin/python -m pytest -q -m "not slow"', folder, env=env, timeout=20 * MINUTE_S)
    assert " passed" in _pytest_summary(done)


def _testbed_hardware_missing() -> list[str]:
    """What the hardware tier needs and this host lacks (its collectors' own checks): that tier
    fails, by design, where perf hardware events, Intel RDT or blktrace are missing."""
    blocks = ({"perf": True}, {"rdt": {"interval_ms": 100}}, {"blktrace": True})
    reasons = [collector.check() for block in blocks for collector in build_collectors(block, {"duration_s": 1.0})]
    return [reason for reason in reasons if reason]


@pytest.mark.timeout(10 * MINUTE_S)
@pytest.mark.nested_suite
def test_the_hardware_tier(dev_clone):
    missing = _testbed_hardware_missing()
    if missing:
        pytest.skip(f"the testbed's hardware tier: this host lacks {'; '.join(missing)}")
    folder, env = dev_clone
    done = sh_shown(".venv/bin/python -m pytest -q -m hardware", folder, env=env, timeout=10 * MINUTE_S)
    assert " passed" in _pytest_summary(done)


def _openwhisk_skip() -> None:
    if not (OPENWHISK_BUILD / "build.env").is_file():
        pytest.skip(f"OpenWhisk standalone is not built in {OPENWHISK_BUILD}: run ./setup.sh --openwhisk")
    problem = docker_problem()
    if problem is not None:
        pytest.skip(f"OpenWhisk standalone runs its actions in Docker: {problem}")


@pytest.mark.timeout(20 * MINUTE_S)
@pytest.mark.nested_suite
def test_the_openwhisk_tier_on_the_testbed_line(dev_clone):
    _openwhisk_skip()
    folder, env = dev_clone
    done = sh_shown(".venv/bin/python -m pytest -q -m openwhisk", folder, env=env, timeout=20 * MINUTE_S)
    assert " passed" in _pytest_summary(done)


@pytest.mark.timeout(20 * MINUTE_S)
@pytest.mark.nested_suite
def test_the_openwhisk_tier_file(dev_clone):
    _openwhisk_skip()
    folder, env = dev_clone
    done = sh_shown(
        ".venv/bin/python -m pytest -m openwhisk -n 0 tests/test_openwhisk_tier.py",
        folder,
        env=env,
        timeout=20 * MINUTE_S,
    )
    last = _pytest_summary(done)
    assert " passed" in last and "skipped" not in last, last


@pytest.mark.timeout(20 * MINUTE_S)
@pytest.mark.nested_suite
def test_one_test_of_this_tier_as_the_guide_shows(dev_clone):
    """docs/development.md's line for this tier, in the clone: one test, in one process."""
    folder, env = dev_clone
    done = sh_shown(
        ".venv/bin/python -m pytest -m docs_long -n 0 tests/test_docs_long.py::test_capacity_json_dumps --durations=0",
        folder,
        env=env,
        timeout=20 * MINUTE_S,
    )
    assert _pytest_summary(done).startswith("=") and " 1 passed in " in done.stdout, done.stdout[-2000:]
    assert "call     tests/test_docs_long.py::test_capacity_json_dumps" in done.stdout  # --durations=0


@pytest.mark.timeout(20 * MINUTE_S)
def test_the_lint(dev_clone):
    folder, env = dev_clone
    done = sh_shown(".ci/lint", folder, env=env, timeout=20 * MINUTE_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "All checks passed!" in done.stdout and "Success: no issues found" in done.stdout + done.stderr


# --- OpenWhisk standalone (docs/platforms.md) ---


@pytest.mark.timeout(20 * MINUTE_S)
def test_local_start_of_openwhisk_standalone_then_deploy_and_stop(scratch):
    """docs/platforms.md: start the standalone server, which faasprof's commands then find (a
    deploy goes to it), and stop it, which removes its action containers."""
    _openwhisk_skip()
    folder, env = scratch
    env = {**env, HOME_ENV: str(OPENWHISK_BUILD)}
    (folder / "hello.py").write_text('def main(args):\n    return {"greeting": "hello"}\n', encoding="utf-8")
    started = sh_shown("faasprof local start --platform openwhisk", folder, env=env, timeout=10 * MINUTE_S)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert "OpenWhisk 2.0.0 standalone running at http://127.0.0.1:" in started.stderr, started.stderr
        apihost = started.stdout.strip().splitlines()[-1]
        deployed = sh_shown("faasprof deploy hello.py", folder, env=env, timeout=5 * MINUTE_S)
        assert deployed.returncode == 0, deployed.stderr[-3000:]
        assert f"deploying 1 action(s) to {apihost} (namespace guest)" in deployed.stderr, deployed.stderr
    finally:
        stopped = sh_shown("faasprof local stop", folder, env=env, timeout=5 * MINUTE_S)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout + stopped.stderr, stopped.stderr
    containers = subprocess.run(
        ["docker", "ps", "-a", "--filter", "name=wsk0_", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        timeout=MINUTE_S,
        check=False,
    )
    assert containers.stdout.split() == [], "action containers left behind"


@pytest.mark.timeout(40 * MINUTE_S)
def test_the_main_job_on_openwhisk_in_a_fresh_clone(clone):
    _openwhisk_skip()
    folder, env = clone
    env = {**env, HOME_ENV: str(OPENWHISK_BUILD)}
    done = sh_shown(
        "./setup.sh --openwhisk && .venv/bin/faasprof local start --platform openwhisk --pause-grace-ms 250 "
        "&& .venv/bin/faasprof run faasprof/workload_configs/first_run_modes.json --analyze; "
        ".venv/bin/faasprof local stop",
        folder,
        env=env,
        timeout=40 * MINUTE_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]  # local stop's exit: the run's is checked below
    assert "already built" in done.stdout + done.stderr
    run_dirs = sorted((folder / "runs").glob("first_run_modes-*"))
    assert run_dirs, done.stdout[-2000:]
    _check_analyzed_run(run_dirs[-1], phases=3)
    platform = _json(run_dirs[-1] / "manifest.json")["platform"]
    assert platform["kind"] == "openwhisk" and platform["settings"]["pause_grace_ms"] == 250, platform


@pytest.mark.timeout(60 * MINUTE_S)
def test_openwhisk_built_from_a_source_export(clone, tmp_path):
    """The build itself, into a folder of the test's (the user's build stays as it is), from the
    export the user's build was made from (its build.env names it)."""
    _openwhisk_skip()
    source = next(
        (
            line.partition("=")[2]
            for line in (OPENWHISK_BUILD / "build.env").read_text(encoding="utf-8").splitlines()
            if line.startswith("OW_SRC=")
        ),
        "",
    )
    if not source or not Path(source).is_dir():
        pytest.skip(f"{OPENWHISK_BUILD / 'build.env'} names no source export that exists (OW_SRC)")
    folder, env = clone
    env = {**env, HOME_ENV: str(tmp_path / "openwhisk-standalone")}
    done = sh_shown(
        "./setup.sh --openwhisk --source OPENWHISK_2.0.0_EXPORT",
        folder,
        env=env,
        substitute={"OPENWHISK_2.0.0_EXPORT": source},
        timeout=60 * MINUTE_S,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = (tmp_path / "openwhisk-standalone" / "build.env").read_text(encoding="utf-8")
    assert f"OW_SRC={source}" in built
    assert (tmp_path / "openwhisk-standalone" / "start.sh").is_file()
