"""``validate`` refuses what ``run`` refuses, with the same line (issue 34: a workload whose every
instance is muted passed validate, exit 0, while run refused it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _faasprof(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.mark.slow
def test_a_workload_that_plans_nothing_is_refused_by_validate_and_run_alike(tmp_path):
    path = tmp_path / "muted.json"
    path.write_text(
        json.dumps(
            {
                "test_name": "muted",
                "test_duration_in_seconds": 5,
                "random_seed": 1,
                "instances": {
                    "a": {"application": "json_dumps", "distribution": "Poisson", "rate": 0, "activity_window": [0, 5]},
                    "b": {"application": "json_dumps", "distribution": "Uniform", "rate": 0, "activity_window": [1, 5]},
                },
            }
        )
    )
    validated = _faasprof("validate", str(path), cwd=tmp_path)
    ran = _faasprof("run", str(path), "--out", str(tmp_path / "runs"), cwd=tmp_path)
    assert validated.returncode == 2 and ran.returncode == 2, (validated.stderr, ran.stderr)
    line = f"{path}: instances: the plan has no invocation"
    assert (
        [said for said in validated.stderr.splitlines() if said.startswith(line)]
        == [said for said in ran.stderr.splitlines() if said.startswith(line)]
        != []
    )
    assert "ok (" not in validated.stdout
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_validate_tells_every_problem_of_a_file_at_once(tmp_path, isolated_home):
    """The functions the embedded platform cannot have were told only once a param_file error was
    fixed; now one validate lists both, and no warning repeats them."""
    path = tmp_path / "stages.json"
    path.write_text(
        json.dumps(
            {
                "test_name": "stages",
                "test_duration_in_seconds": 5,
                "random_seed": 1,
                "instances": {
                    "a": {
                        "application": "json_dumpz",
                        "distribution": "Poisson",
                        "rate": 2,
                        "param_file": "missing-params.json",
                    },
                    "b": {"application": "nosuchfn", "distribution": "Poisson", "rate": 2},
                },
            }
        )
    )
    done = _faasprof("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert [line.split(": ", 2)[1] for line in lines] == [
        "instances.a.param_file",
        "instances.a.application",
        "instances.b.application",
    ], lines
    assert 'did you mean "json_dumps"' in lines[1] and "the embedded localwhisk starts empty" in lines[2]


@pytest.mark.slow
def test_a_source_whose_requirements_cannot_install_fails_validate_as_it_fails_run(tmp_path, isolated_home):
    """validate said ok for a folder whose requirements.txt could not install; run then failed with pip's message."""
    folder = tmp_path / "myfn"
    folder.mkdir()
    (folder / "__main__.py").write_text("def main(args):\n    return {}\n")
    (folder / "requirements.txt").write_text("--no-index\nfaasprof-no-such-package-anywhere==1.0\n")
    path = tmp_path / "own.json"
    path.write_text(
        json.dumps(
            {
                "test_name": "own",
                "test_duration_in_seconds": 3,
                "random_seed": 1,
                "instances": {
                    "a": {"application": "myfn", "source": str(folder), "distribution": "Uniform", "rate": 2}
                },
            }
        )
    )
    validated = _faasprof("validate", str(path), cwd=tmp_path)
    ran = _faasprof("run", str(path), "--out", str(tmp_path / "runs"), cwd=tmp_path)
    assert validated.returncode == 2 and ran.returncode == 2, (validated.stderr, ran.stderr)
    problem = [line for line in validated.stderr.splitlines() if line.startswith(f"{path}: instances.a.source: ")]
    assert problem and "faasprof-no-such-package-anywhere" in problem[0], validated.stderr
    assert problem[0] in ran.stderr.splitlines()
