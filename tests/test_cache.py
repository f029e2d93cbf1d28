"""faasprof's cache of build products: where it is (``FAASPROF_CACHE_DIR``, ``XDG_CACHE_HOME``,
``~/.cache``), the line when it cannot be written, ``faasprof cache list|clean`` (never a path
outside the cache), ``doctor``'s line, and the catalogue's npm packages keyed by their lock and
installed on first use with a line (a fake ``npm`` on PATH: offline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from faasprof.errors import NotReadyError
from faasprof.functions import npm
from faasprof.functions.catalogue import lookup
from faasprof.functions.package import build_archive
from faasprof.paths import CACHE_ENV, CACHE_KINDS, cache_dir, cache_root, cache_usage, clean_cache
from tests.helpers import run_cli


def test_the_setting_wins_then_xdg_then_home():
    assert cache_root({CACHE_ENV: "/srv/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/srv/c")
    assert cache_root({CACHE_ENV: "~/c", "HOME": "/h"}) == Path.home() / "c"
    assert cache_root({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/faasprof")
    assert cache_root({"HOME": "/h"}) == Path("/h/.cache/faasprof")
    # Empty values count as unset, and a relative XDG_CACHE_HOME is ignored (the XDG specification).
    assert cache_root({CACHE_ENV: " ", "XDG_CACHE_HOME": "", "HOME": "/h"}) == Path("/h/.cache/faasprof")
    assert cache_root({"XDG_CACHE_HOME": "relative/cache", "HOME": "/h"}) == Path("/h/.cache/faasprof")


def test_a_relative_setting_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cache_root({CACHE_ENV: "here"}) == tmp_path / "here"


def test_cache_dir_creates_the_kind_on_demand(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert not (tmp_path / "c").exists()
    assert cache_dir("own") == tmp_path / "c" / "own" and (tmp_path / "c" / "own").is_dir()
    with pytest.raises(ValueError, match="unknown cache kind"):
        cache_dir("nonsense")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_unwritable_cache_is_one_line_naming_the_setting(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv(CACHE_ENV, str(locked / "c"))
    try:
        with pytest.raises(NotReadyError, match=f"cannot create faasprof's cache .*set {CACHE_ENV}"):
            cache_dir("archives")
    finally:
        locked.chmod(0o700)


def test_a_file_in_place_of_the_cache_is_one_line_naming_the_setting(tmp_path, monkeypatch):
    (tmp_path / "c").write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    with pytest.raises(NotReadyError, match=f"{tmp_path / 'c'}.*set {CACHE_ENV} to a writable folder"):
        cache_dir("archives")


def test_catalogue_archives_are_built_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    before = _snapshot(lookup("json_dumps").directory.parent)
    data = build_archive(lookup("json_dumps"))
    assert (tmp_path / "c" / "archives" / "json_dumps.zip").read_bytes() == data
    assert _snapshot(lookup("json_dumps").directory.parent) == before, "the build wrote into the package"


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``root`` with its size and mtime: what a build must leave as it was (a
    checkout may hold an older faasprof's faasprof/functions/build or node_modules: they count as they are)."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file()
    }


def test_npm_packages_are_keyed_by_the_lock(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    entry = lookup("img-resize")
    assert entry.npm_packages == ["jimp"]
    assert (
        entry.node_modules == tmp_path / "c" / "npm" / f"img-resize-{npm.lock_hash(entry.directory)}" / "node_modules"
    )
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "package-lock.json").write_text(
        (entry.directory / "package-lock.json").read_text().replace('"jimp"', '"jimp" ')
    )
    assert replace(entry, directory=copy).node_modules != entry.node_modules  # another lock, another install
    assert lookup("markdown").node_modules is None


def _fill(root: Path) -> None:
    (root / "archives").mkdir(parents=True)
    (root / "archives" / "f.zip").write_bytes(b"z" * 1000)
    (root / "archives" / "f.zip.json").write_text("{}")
    (root / "own" / "fn-abc" / "src").mkdir(parents=True)
    (root / "own" / "fn-abc" / "src" / "__main__.py").write_bytes(b"x" * 2000)
    (root / "openwhisk-standalone").mkdir()
    (root / "openwhisk-standalone" / "build.env").write_text("JAR=x\n")


def test_usage_lists_every_kind_and_other_folders(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    _fill(tmp_path)
    usage = {item.kind: item for item in cache_usage()}
    assert list(usage)[: len(CACHE_KINDS)] == list(CACHE_KINDS)
    assert (usage["archives"].entries, usage["archives"].size_bytes) == (1, 1002)
    assert (usage["own"].entries, usage["own"].size_bytes) == (1, 2000)
    assert usage["npm"].entries == 0 and usage["openwhisk-standalone"].what == ""


def test_clean_removes_a_kind_and_never_follows_a_link_outside(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    _fill(root)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (root / "own" / "link").symlink_to(outside)
    (root / "own" / "fn-abc" / "src" / "inner-link").symlink_to(outside)
    links_bytes = sum((root / "own" / name).lstat().st_size for name in ("link", "fn-abc/src/inner-link"))
    assert clean_cache("own") == (2, 2000 + links_bytes)
    assert (outside / "keep.txt").read_text() == "mine"
    assert list((root / "own").iterdir()) == [] and (root / "archives" / "f.zip").exists()
    assert clean_cache() == (1, 1002)
    assert list((root / "archives").iterdir()) == [] and (root / "openwhisk-standalone" / "build.env").exists()


def test_a_link_in_place_of_a_kind_is_left_alone(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "data.bin").write_bytes(b"1")
    (root / "padding").symlink_to(outside)
    monkeypatch.setenv(CACHE_ENV, str(root))
    assert clean_cache("padding") == (0, 0)
    assert (outside / "data.bin").exists()


def test_cache_command_lists_cleans_and_doctor_says_where(tmp_path):
    root = tmp_path / "cache"
    _fill(root)
    env = {CACHE_ENV: str(root)}
    listed = run_cli("cache", env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"cache {root}: 2.9 KiB (set {CACHE_ENV} to move it)"  # 1002 + 2000 + 6 bytes
    assert lines[1].split()[:4] == ["archives", "1002", "B", "1"] and "action zips" in lines[1]
    assert any(line.split()[0] == "openwhisk-standalone" and "faasprof cache clean leaves it" in line for line in lines)
    wrong = run_cli("cache", "list", "--kind", "own", env=env)
    assert (wrong.returncode, wrong.stderr.splitlines()[0].split(":")[0]) == (2, "--kind")
    cleaned = run_cli("cache", "clean", "--kind", "own", env=env)
    assert (cleaned.returncode, cleaned.stdout.strip()) == (0, f"removed 1 own entries (2.0 KiB) from {root}")
    assert not (root / "own" / "fn-abc").exists() and (root / "archives" / "f.zip").exists()
    doctor = run_cli("doctor", "--json", env=env)
    assert f"build products in {root} (1008 B)" in doctor.stdout


FAKE_NPM = """#!/bin/sh
# Stands in for npm: records how it was called, then installs a jimp that is only a package.json.
echo "$* | $(ls | tr "\\n" " ")" >> "$FAKE_NPM_LOG"
mkdir -p node_modules/jimp && echo '{"name": "jimp", "version": "1.6.1"}' > node_modules/jimp/package.json
"""


def test_first_use_installs_the_locked_packages_into_the_cache_with_a_line(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    log = tmp_path / "npm.log"
    env = {
        CACHE_ENV: str(tmp_path / "c"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_NPM_LOG": str(log),
    }
    entry = lookup("img-resize")
    before = _snapshot(entry.directory)
    target = tmp_path / "c" / "npm" / f"img-resize-{npm.lock_hash(entry.directory)}"
    command = [sys.executable, "-m", "faasprof.functions.package", "img-resize"]
    first = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert (
        f"img-resize: installing npm packages jimp with npm ci into {target} (about {npm.TYPICAL_INSTALL_S} s"
        in first.stderr
    )
    assert log.read_text().splitlines() == [
        "ci --omit=dev --no-audit --no-fund --loglevel=error | package-lock.json package.json "
    ]
    assert (target / "node_modules" / "jimp" / "package.json").is_file()
    assert not list((tmp_path / "c" / "npm").glob(".*")), "the temporary install folder is renamed into place"
    with zipfile.ZipFile(tmp_path / "c" / "archives" / "img-resize.zip") as archive:
        assert "node_modules/jimp/package.json" in archive.namelist() and "index.js" in archive.namelist()
    again = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "installing" not in again.stderr
    assert len(log.read_text().splitlines()) == 1, "installed once per lock"
    assert _snapshot(entry.directory) == before, "the install wrote into the package"


@pytest.mark.slow
def test_run_says_it_installs_a_workloads_npm_packages_before_it_starts(tmp_path, isolated_home):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    workload = tmp_path / "img.json"
    workload.write_text(
        json.dumps(
            {
                "test_name": "img",
                "test_duration_in_seconds": 1,
                "random_seed": 1,
                "blocking_cli": True,
                "instances": {"i": {"application": "img-resize", "distribution": "Uniform", "rate": 1}},
            }
        )
    )
    env = {
        CACHE_ENV: str(tmp_path / "c"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_NPM_LOG": str(tmp_path / "npm.log"),
    }
    done = run_cli("run", workload, "--out", tmp_path / "runs", "--isolation", "rlimit", env=env, timeout=120)
    said = done.stderr.splitlines()
    installing = next(
        i for i, line in enumerate(said) if line.startswith("img-resize: installing npm packages jimp with npm ci into")
    )
    assert installing < next(i for i, line in enumerate(said) if line.startswith("run directory")), done.stderr
    assert (tmp_path / "c" / "npm").is_dir() and (tmp_path / "npm.log").read_text().count("ci ") == 1
