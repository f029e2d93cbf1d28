"""The example plug-in as a user installs it: faasprof's wheel and the plug-in, pip-installed into a
fresh venv, used from a folder outside any checkout through doctor, validate, run and analyze.

The wheel is built from a clean clone of this commit (the ``wheels`` fixture, which
tests/test_installed.py installs too) and installed, with the example plug-in
(examples/faasprof-example-plugin of the same clone, built with it), by pip
offline into a new venv under tmp; the venv reaches the dev venv's third-party packages through a
``.pth`` path line (nothing is downloaded; the dev venv gets nothing). The same venv checks that
a wheel user reaches the shipped workloads by name and through ``faasprof examples``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doc_commands import sh_shown
from tests.helpers import REPO_ROOT, Wheels, clean_clone
from tests.test_installed import faasprof, new_venv, pip_install, user_env

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="needs the git checkout")]


def sawtooth_loadavg(folder: Path) -> Path:
    """A 4 s run of json_dumps on the example's Sawtooth (1 to 5 per second every 2 s: 12
    invocations) with the example's loadavg collector sampling every 100 ms."""
    data = {
        "test_name": "sawtooth_loadavg",
        "test_duration_in_seconds": 4,
        "blocking_cli": True,
        "instances": {
            "ramp": {
                "application": "json_dumps",
                "distribution": "Sawtooth",
                "sawtooth_low_rps": 1,
                "sawtooth_high_rps": 5,
                "sawtooth_period_s": 2,
            }
        },
        "monitoring": {"loadavg": {"interval_ms": 100, "required": True}},
    }
    path = folder / "sawtooth_loadavg.json"
    path.write_text(json.dumps(data))
    return path


def pip_in(python: Path) -> Path:
    """The venv's ``pip`` (its own, made without one: the dev venv's pip module run by its python),
    offline: no index, the build backend the venv already has (pip's own settings, as a user's
    pip.conf would give them)."""
    script = python.parent / "pip"
    script.write_text(f'#!/bin/sh\nexec {python} -m pip "$@"\n')
    script.chmod(0o755)
    return script


def test_the_example_plugin_installed_with_pip_is_used_by_validate_run_and_analyze(tmp_path, wheels: Wheels):
    """docs/plugins.md's lines as shown: faasprof's wheel in a fresh venv, ``pip install`` of the
    plug-in in the checkout (a clean clone), then doctor, validate and run --analyze from a folder
    outside it, with the venv's bin on PATH."""
    clone = clean_clone(tmp_path)
    python = new_venv(tmp_path / "venv")
    pip_install(python, str(wheels.faasprof))
    pip_in(python)
    env = {**user_env(tmp_path, python), "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_QUIET": "1"}
    installed = sh_shown("pip install examples/faasprof-example-plugin", clone, env=env, path=[python.parent])
    assert installed.returncode == 0, installed.stderr[-3000:]
    work = tmp_path / "work"
    work.mkdir()

    doctor = sh_shown("faasprof doctor", work, env=env, path=[python.parent])
    assert doctor.returncode == 0, doctor.stderr
    assert "plugins   ok      collector 'loadavg' from faasprof-example-plugin 0.1.0" in doctor.stdout
    assert "plugins   ok      distribution 'Sawtooth' from faasprof-example-plugin 0.1.0" in doctor.stdout
    assert "plugins   info    metric 'wait_over_platform_latency' from faasprof-example-plugin 0.1.0" in doctor.stdout
    assert "setup.sh" not in doctor.stdout, "a wheel user has no setup.sh"

    sawtooth_loadavg(work)
    validated = sh_shown("faasprof validate sawtooth_loadavg.json", work, env=env, path=[python.parent])
    assert validated.returncode == 0, validated.stderr
    ran = sh_shown("faasprof run sawtooth_loadavg.json --analyze", work, env=env, path=[python.parent], timeout=300)
    assert ran.returncode == 0, ran.stderr
    run_dir = work / ran.stdout.strip().splitlines()[-1]
    samples = (run_dir / "monitors" / "loadavg" / "loadavg.csv").read_text().splitlines()
    assert samples[0].startswith("elapsed_ns,load_1min,") and len(samples) > 10
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["run"]["planned"] == 12 and summary["run"]["outcomes"]["ok"] == 12
    assert summary["monitors"]["loadavg"]["rows"] > 10 and "load_1min" in summary["monitors"]["loadavg"]["mean"]
    # The example's metric: a column of the frame, percentiles in each phase's statistics.
    assert '"wait_over_platform_latency_p50": ' in json.dumps(summary)
    assert (run_dir / "analysis" / "monitor_loadavg.parquet").is_file()
    assert (
        "<td class='l'>loadavg</td><td class='l'>load_1min</td>" in (run_dir / "analysis" / "report.html").read_text()
    )

    # The shipped workloads, by bare name, from a folder that holds none of them.
    assert faasprof(env, work, "validate", "paper_listing1").returncode == 0
    missing = faasprof(env, work, "validate", "workload_configs/paper_listing1.json")
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        "workload_configs/paper_listing1.json: no such file; faasprof ships paper_listing1: name it bare "
        "(faasprof run paper_listing1), or copy it here with faasprof examples copy paper_listing1"
    ]
    listed = faasprof(env, work, "examples")
    assert listed.returncode == 0 and any(line.startswith("paper_listing1 ") for line in listed.stdout.splitlines())
    copied = faasprof(env, work, "examples", "copy", "paper_listing1")
    assert copied.returncode == 0 and (work / "paper_listing1.json").is_file()
