"""faasprof as a user gets it: a clean clone whose commands write nothing into the checkout, and a
wheel built from that clone that installs with pip into a new venv and works from elsewhere.

Both install into a venv of their own (outside the checkout, no PYTHONPATH); it reaches the dev
venv's third-party packages through a ``.pth`` path line, so nothing is downloaded. A path line
only adds a folder to ``sys.path``: the dev venv's own ``.pth`` files (its editable faasprof
among them) are not run, so ``faasprof`` is the one installed here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from faasprof.experiments import capacity_store
from faasprof.paths import CACHE_ENV
from tests.doc_commands import sh_shown
from tests.helpers import REPO_ROOT, Wheels, clean_clone, git
from tests.test_own_functions import python_function

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="needs the git checkout")]

WHEEL_DATA = (
    "faasprof/py.typed",  # PEP 561: type checkers read the installed package's annotations
    *(f"faasprof/analyzer/templates/{p.name}" for p in sorted((REPO_ROOT / "faasprof/analyzer/templates").iterdir())),
    "faasprof/functions/manifest.json",
    "faasprof/functions/json_dumps/__main__.py",
    "faasprof/functions/img-resize/index.js",
    "faasprof/functions/img-resize/package-lock.json",
    "faasprof/functions/runners/python_runner.py",
    "faasprof/functions/runners/node_runner.js",
    "faasprof/workload_configs/schema.json",
    "faasprof/workload_configs/first_run_modes.json",
    "faasprof/workload_configs/traces/azure_sample.csv",
    "faasprof/localwhisk/runtimes/launcher.js",
    "faasprof/localwhisk/runtimes/launcher.py",
    "faasprof/localwhisk/localwhisk-vs-openwhisk.md",
)


def new_venv(folder: Path) -> Path:
    """A venv without pip whose third-party packages are the dev venv's (a ``.pth`` path line)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60)
    python = folder / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    )
    (site / "zz_faasprof_dev_site.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def pip_install(python: Path, *args: str) -> None:
    """The dev venv's pip installing into ``python``'s venv, offline."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def user_env(tmp_path: Path, venv_python: Path) -> dict:
    """A user's environment: the venv's bin first, a HOME and a cache of the test's own, no PYTHONPATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "FAASPROF_TEST_HOME", "FAASPROF_CAPACITY_STORE", "WSK_CONFIG_FILE", "VIRTUAL_ENV")
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    env.update(
        HOME=str(tmp_path / "home"),
        PATH=f"{venv_python.parent}{os.pathsep}{env.get('PATH', '')}",
        **{CACHE_ENV: str(tmp_path / "cache")},
    )
    return env


def faasprof(env: dict, cwd: Path, *args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [str(Path(env["PATH"].split(os.pathsep)[0]) / "faasprof"), *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def ignored_status(checkout: Path) -> set[str]:
    return set(git("status", "--ignored", "--porcelain", cwd=checkout).splitlines())


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(folder)): (path.lstat().st_size, path.lstat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
    }


def quick_start_of(workload: Path, folder: Path, phase_s: float) -> Path:
    """A copy of the quick start ``workload`` in ``folder`` whose back-to-back phases last ``phase_s`` each."""
    data = json.loads(workload.read_text())
    for index, instance in enumerate(data["instances"].values()):
        instance["activity_window"] = [index * phase_s, (index + 1) * phase_s]
    data["test_duration_in_seconds"] = len(data["instances"]) * phase_s
    copy = folder / workload.name
    copy.write_text(json.dumps(data))
    return copy


def test_deploy_and_native_of_an_own_folder_write_nothing_into_a_clean_clone(tmp_path):
    clone = clean_clone(tmp_path)
    python = new_venv(tmp_path / "venv")
    pip_install(python, "-e", str(clone))  # as ./setup.sh installs it: editable
    env = user_env(tmp_path, python)
    own = python_function(tmp_path)  # a requirements.txt naming a wheel built here: offline
    (clone / ".venv").symlink_to(python.parent.parent)  # the checkout's .venv, as ./setup.sh makes it
    before = ignored_status(clone)
    # docs/development.md's regeneration of the guides' tables: they already hold what it writes.
    written = sh_shown(
        ".venv/bin/python -m faasprof.monitoring.collectors --write && "
        ".venv/bin/python -m faasprof.invoker.schema_doc --write",
        clone,
        env=env,
    )
    assert written.returncode == 0, written.stderr
    assert git("status", "--porcelain", cwd=clone) == ""

    started = faasprof(env, clone, "local", "start", "--port", "0", timeout=60)
    assert started.returncode == 0, started.stderr
    try:
        deployed = faasprof(env, clone, "deploy", own, timeout=180)
        assert deployed.returncode == 0, deployed.stderr
        assert deployed.stdout.split()[:2] == ["shouter", "created"]
    finally:
        stopped = faasprof(env, clone, "local", "stop", timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    native = faasprof(env, clone, "native", own, "--repeat", "2", timeout=120)
    assert native.returncode == 0, native.stderr

    assert ignored_status(clone) - before == {"!! runs/"}
    assert list((tmp_path / "cache" / "own").glob("shouter-*/src/virtualenv/lib/python*/site-packages/tinyshout.py"))
    assert list((tmp_path / "cache" / "own").glob("shouter-*/shouter.zip"))


def test_a_wheel_from_a_clean_clone_installs_and_works_from_another_folder(tmp_path, wheels: Wheels):
    assert "absent from the `packages` configuration" not in wheels.build_stderr
    wheel = wheels.faasprof
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(WHEEL_DATA) <= names, sorted(set(WHEEL_DATA) - names)
    assert not any(
        name.startswith(("faasprof/functions/build/", "analyzer/", "functions/", "tests/", "bench/"))
        or "/node_modules/" in name
        for name in names
    )

    python = new_venv(tmp_path / "venv")
    pip_install(python, str(wheel))
    package = Path(
        subprocess.run(
            [python, "-c", "import faasprof, os; print(os.path.dirname(faasprof.__file__))"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
            env=user_env(tmp_path, python),
        ).stdout.strip()
    )
    assert package.is_relative_to(tmp_path / "venv"), package
    installed = files_of(package)
    env = user_env(tmp_path, python)
    work = tmp_path / "work"
    work.mkdir()
    # The capacity json_dumps' fractions need, stored as `faasprof capacity` would: no search runs.
    store_key = capacity_store.key(
        capacity_store.host_identity(), capacity_store.platform_identity(None, {}), "json_dumps", None
    )
    capacity_store.record(
        store_key,
        {"capacity_rps": 8.0, "result_file": "seeded by the test"},
        path=tmp_path / "home" / ".local" / "share" / "faasprof" / "capacity.json",
    )
    workload = package / "workload_configs" / "first_run_modes.json"

    for args in (("validate", workload), ("plan", workload, "--out", work / "plan.csv")):
        done = faasprof(env, work, *args)
        assert done.returncode == 0, done.stderr
    # The quick start run with its three phases 5 s long instead of 15: what is checked is that the
    # installed package runs it from elsewhere, not its modes (its 45 s made the test a minute long).
    ran = faasprof(env, work, "run", quick_start_of(workload, work, phase_s=5), "--quiet", timeout=150)
    assert ran.returncode == 0, ran.stderr
    run_dir = work / ran.stdout.strip().splitlines()[-1]
    assert run_dir.parent == work / "runs"
    analyzed = faasprof(env, work, "analyze", run_dir, "--no-plots", timeout=120)
    assert analyzed.returncode == 0, analyzed.stderr
    # The report's templates are read from the installed package.
    assert (run_dir / "analysis" / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

    def python_c(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([python, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=60)

    assert "No module named 'analyzer'" in python_c("import analyzer").stderr
    loaded = python_c(f"import faasprof; run = faasprof.load_run({str(run_dir)!r}); print(len(run.invocations))")
    assert loaded.returncode == 0 and int(loaded.stdout) > 0, loaded.stderr

    own = tmp_path / "hello.py"
    own.write_text("def main(args):\n    return {'hello': args.get('name', 'world')}\n")
    started = faasprof(env, work, "local", "start", "--port", "0", timeout=60)
    assert started.returncode == 0, started.stderr
    try:
        deployed = faasprof(env, work, "deploy", own, "json_dumps")
        assert deployed.returncode == 0, deployed.stderr
    finally:
        assert faasprof(env, work, "local", "stop", timeout=60).returncode == 0
    assert list((tmp_path / "cache" / "own").glob("hello-*/hello.zip"))
    assert (tmp_path / "cache" / "archives" / "json_dumps.zip").is_file()
    assert files_of(package) == installed, "nothing is written into the installed package"
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
