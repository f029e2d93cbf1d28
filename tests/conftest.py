"""The suite's fixtures and hooks; the helpers tests import are in ``tests/helpers.py``."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from faasprof.docker import docker_problem
from faasprof.experiments import native
from faasprof.functions.catalogue import lookup
from faasprof.paths import CACHE_ENV, cache_root
from tests.helpers import Wheels, built_wheels, host_lock, longest_files_first, run_cli

# A test that gives faasprof a HOME of its own keeps the user's cache of build products (the npm
# packages ./setup.sh installed) instead of building them again under every temporary HOME.
os.environ.setdefault(CACHE_ENV, str(cache_root()))
# And every test runs under a HOME of this session's own: the user's ~/.wskprops, or a `faasprof
# local start` they left running (its connection is under ~/.local/share/faasprof), must never
# become the platform a test measures (an OpenWhisk left on port 3233 once answered the slowdown
# tests). pip keeps the user's cache so that the wheel test installs without the network.
os.environ.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
os.environ["HOME"] = tempfile.mkdtemp(prefix="faasprof-test-home-")
atexit.register(shutil.rmtree, os.environ["HOME"], True)
os.environ.pop("WSK_CONFIG_FILE", None)

# Every localwhisk reaps the host's leftovers of dead ones (stale cgroups, orphan sandboxes and
# containers) when it starts. A test that plants such leftovers and checks that its own localwhisk
# reaped them is marked ``host_exclusive`` and runs while no other test does: each test holds this
# lock for its whole protocol (its module fixtures' setup and teardown included), shared, or
# exclusively when marked; the suite's xdist workers would otherwise race to reap them.
HOST_LOCK = Path(tempfile.gettempdir()) / "faasprof-tests-host.lock"


def pytest_sessionstart(session):
    # A suite started in the background by a script (`cmd &` in a POSIX shell) inherits SIGINT
    # ignored, and so would every faasprof it starts: the Ctrl-C tests need it delivered. A
    # handler, unlike SIG_IGN, is reset to the default in the processes the tests start.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # CI (.ci/run) asks for the docker tests to run: a machine where ./setup.sh --dev could not make
    # Docker usable fails the suite instead of skipping those tests quietly.
    if os.environ.get("FAASPROF_REQUIRE_DOCKER") == "1":
        problem = docker_problem()
        if problem is not None:
            pytest.exit(f"FAASPROF_REQUIRE_DOCKER=1 but isolation docker is unavailable: {problem}", returncode=3)


def pytest_configure(config):
    share_bytecode(config)


def share_bytecode(config) -> None:
    """Let the suite's Python processes keep compiled bytecode, in one folder under pytest's cache
    (or the temporary folder without the cache plug-in) rather than next to the sources.

    A host that sets PYTHONDONTWRITEBYTECODE (this testbed's shells do) and a venv installed with
    ``pip --no-compile`` (./setup.sh) compile numpy, pandas and faasprof from source in every
    process: each ``faasprof run`` a test starts spent 1.5 of its 2.3 s of CPU compiling. Here the
    first process writes the bytecode and the others read it. A folder of its own keeps the
    checkout, the venv and the packages tests install (test_installed checks that nothing is
    written into them) as clean as PYTHONDONTWRITEBYTECODE did; a user's own prefix is kept."""
    cache = getattr(config, "cache", None)
    folder = (
        cache.mkdir("pycache") if cache is not None else Path(tempfile.gettempdir()) / f"faasprof-pycache-{os.getuid()}"
    )
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(folder))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False


# Tests that need the testbed, or run for many minutes (the documents' long command lines,
# tests/test_docs_long.py), run only when a -m expression names their marker (-m hardware,
# -m openwhisk, -m docs_long). This is a hook, not `-m 'not hardware and not openwhisk'` in addopts, because a
# second -m replaces the first: the quick tier's -m "not slow" would have selected them.
TESTBED_ONLY = ("hardware", "openwhisk", "docs_long")


def pytest_collection_modifyitems(config, items):
    named = set(re.findall(r"[\w-]+", config.getoption("markexpr") or ""))
    left_out = [marker for marker in TESTBED_ONLY if marker not in named]
    if left_out:
        kept, deselected = [], []
        for item in items:
            (deselected if any(item.get_closest_marker(marker) for marker in left_out) else kept).append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
    longest_files_first(items, config.cache.get(DURATIONS_KEY, {}) if getattr(config, "cache", None) else {})


# Each test's seconds (setup, call and teardown) in the last session that ran it, kept in pytest's
# cache by the controller; the next session orders the files by them.
DURATIONS_KEY = "faasprof/test_durations_s"
# This session's seconds per test, summed over its phases' reports (in the controller, which
# receives the workers' reports, or in the one process of -n 0).
TEST_SECONDS: Counter = Counter()


def pytest_runtest_logreport(report):
    TEST_SECONDS[report.nodeid] += report.duration


def pytest_sessionfinish(session):
    cache = getattr(session.config, "cache", None)
    if cache is None or hasattr(session.config, "workerinput") or not TEST_SECONDS:
        return
    durations_s = {
        nodeid: seconds
        for nodeid, seconds in cache.get(DURATIONS_KEY, {}).items()
        if (session.config.rootpath / nodeid.split("::")[0]).is_file()  # a removed file's tests go
    }
    durations_s.update({nodeid: round(seconds, 3) for nodeid, seconds in TEST_SECONDS.items()})
    cache.set(DURATIONS_KEY, durations_s)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("nested_suite"):
        # It runs a suite inside, whose tests take the lock one by one: held here as well, an inner
        # host_exclusive test waited for this holder for ever, and every session on the host
        # waited behind it at the turnstile.
        yield
        return
    with host_lock(HOST_LOCK, exclusive=item.get_closest_marker("host_exclusive") is not None):
        yield


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def isolated_home(tmp_path, monkeypatch):
    """A HOME without ~/.wskprops, so the embedded platform is the default."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FAASPROF_TEST_HOME", str(home))
    monkeypatch.delenv("WSK_CONFIG_FILE", raising=False)
    return home


@pytest.fixture(scope="module")
def workers():
    """``workers(name)``: one warm native worker per catalogue function, started on first use and
    stopped with the module (a function whose tools are missing is skipped)."""
    started = {}

    def get(name):
        if name not in started:
            entry = lookup(name)
            missing = entry.missing()
            if missing:
                pytest.skip(missing[0])
            worker = native.Worker(entry)
            worker.start()
            started[name] = worker
        return started[name]

    yield get
    for worker in started.values():
        worker.stop()


@pytest.fixture(scope="session")
def wheels(request, tmp_path_factory) -> Wheels:
    """faasprof's wheel and the example plug-in's from a clean clone of this commit, built once for
    the session's workers (and later sessions of the same commit) under pytest's cache."""
    cache = getattr(request.config, "cache", None)
    return built_wheels(cache.mkdir("wheels") if cache is not None else tmp_path_factory.mktemp("wheels"))
