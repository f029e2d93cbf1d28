"""Helpers the tests import: the checkout's paths, its tracked files, ``faasprof`` run as a
subprocess, a test server's JSON answer, the wheels built from a clean clone, the order the test
files run in, and the host's lock. Fixtures and hooks stay in ``tests/conftest.py``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / "data"


def tracked_files(root: Path = REPO_ROOT) -> list[Path]:
    """The project's files under ``root``: tracked, or new and not ignored (build outputs, runs and
    virtualenvs beside them are no part of the project); outside a git checkout, every file. A
    check that reads the project's own files reads these, never what a run left in the tree."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        timeout=60,
    )
    if done.returncode != 0:
        return sorted(path for path in root.rglob("*") if path.is_file())
    return sorted(root / name for name in done.stdout.decode().split("\0") if name)


def run_cli(
    *args: str,
    cwd: str | os.PathLike | None = None,
    timeout: float = 120,
    env: dict | None = None,
    input: str | None = None,
):
    """Run ``faasprof`` as a subprocess; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("WSK_CONFIG_FILE", None)
    full_env["HOME"] = full_env.get("FAASPROF_TEST_HOME", full_env.get("HOME", ""))
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "faasprof", *map(str, args)],
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        input=input,
    )


def send_json(handler, status: int, body: object) -> None:
    """A test server's answer: ``body`` as JSON with its length (``handler`` is the request's
    ``BaseHTTPRequestHandler``; keep-alive clients need the length)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def not_private(root: Path) -> list[str]:
    """What under ``root`` (itself included; links are not followed) group or others may
    read, write or enter: ``"relative/path 0o644"`` each, [] when all is private to its owner."""
    found = []
    for path in [root, *sorted(root.rglob("*"))]:
        mode = path.lstat().st_mode
        if not (mode & 0o170000 == 0o120000) and mode & 0o077:
            found.append(f"{path.relative_to(root)} {oct(mode & 0o777)}")
    return found


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, which has ended, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout


def clean_clone(folder: Path) -> Path:
    """A clone of this checkout's commit in ``folder`` (what CI or a new user starts from)."""
    clone = folder / "clone"
    git("clone", "-q", "--no-checkout", str(REPO_ROOT), str(clone), cwd=folder)
    git("checkout", "-q", git("rev-parse", "HEAD", cwd=REPO_ROOT).strip(), cwd=clone)
    return clone


@dataclass(frozen=True)
class Wheels:
    """faasprof's wheel and the example plug-in's, built by one ``pip wheel`` from a clean clone."""

    faasprof: Path
    plugin: Path
    build_stderr: str


def built_wheels(cache: Path) -> Wheels:
    """The wheels of this checkout's commit, built once into ``cache`` and kept there for the tests
    (and sessions) that install them: building both from a clean clone took 14 s on a loaded
    2-core host, and test_installed and test_plugin_install each built them. The folder is named
    by the commit and the build tools' versions (what the wheels are made of); a lock makes a
    second xdist worker wait for the first one's build; older builds are removed."""
    key = "-".join((git("rev-parse", "HEAD", cwd=REPO_ROOT).strip(), *map(metadata.version, ("pip", "setuptools"))))
    folder = cache / key
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not folder.is_dir():
            for old in cache.iterdir():
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
            scratch = Path(tempfile.mkdtemp(dir=cache, prefix="building-"))
            clone = clean_clone(scratch)
            built = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
                + ["-w", str(scratch / "dist"), str(clone), str(clone / "examples" / "faasprof-example-plugin")],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert built.returncode == 0, built.stderr[-3000:]
            (scratch / "dist" / "build-stderr.txt").write_text(built.stderr)
            # Renamed whole once built: another worker never sees a half-written folder.
            (scratch / "dist").rename(folder)
            shutil.rmtree(scratch, ignore_errors=True)
    (faasprof,) = folder.glob("faasprof-*.whl")
    (plugin,) = folder.glob("faasprof_example_plugin-*.whl")
    return Wheels(faasprof, plugin, (folder / "build-stderr.txt").read_text())


# What a test not timed yet is taken to last: a slow one about as long as the median slow test
# timed on a loaded 2-core host, a quick one a fifth of a second.
UNTIMED_SLOW_S = 10.0
UNTIMED_QUICK_S = 0.2


def longest_files_first(items: list, durations_s: dict[str, float]) -> None:
    """Order the test files by how long each is expected to take, longest first (each file's own
    order kept): its tests' seconds in the last session that ran them, or for a test not timed
    yet (a clean clone's first session, a new test) 10 s when marked slow and 0.2 s when not.

    The xdist workers take whole files in this order (pyproject's --no-loadscope-reorder): the
    longest file starts first and the suite ends on quick files that the workers share out, not
    on one long file while the others idle. xdist's own order (files with the most tests first)
    left the files of one or two long tests (the wheel, the Ansible role, reproduce) to the end;
    counting slow tests put a file of one 90 s test behind files of five 5 s tests.

    The files holding a ``host_exclusive`` test go last (all of them short): such a test waits
    for every test running at that moment to end, and every worker waits behind it; among the
    long files it waited 83 s for one, and a worker 79 s behind it."""
    expected_s: Counter = Counter()
    exclusive: set[Path] = set()
    for item in items:
        untimed_s = UNTIMED_SLOW_S if item.get_closest_marker("slow") else UNTIMED_QUICK_S
        expected_s[item.path] += durations_s.get(item.nodeid, untimed_s)
        if item.get_closest_marker("host_exclusive"):
            exclusive.add(item.path)
    position = {path: index for index, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (item.path in exclusive, -expected_s[item.path], position[item.path]))


@contextlib.contextmanager
def host_lock(lock: Path, exclusive: bool) -> Iterator[None]:
    """Hold ``lock`` shared, or exclusively; one waiting to hold it exclusively waits only for the
    holders of the moment. flock grants a shared lock while an exclusive one waits, so with tests
    starting back to back on the xdist workers (and in the other sessions on the host) a
    host_exclusive test waited until no test ran anywhere at one instant: its worker stalled, and
    its file could end the suite. Every taker passes a turnstile (``lock`` + ".turnstile"), which
    the exclusive one keeps while it waits."""
    with open(f"{lock}.turnstile", "a") as turnstile, open(lock, "a") as handle:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
