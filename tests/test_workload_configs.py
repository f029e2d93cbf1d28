"""Every file shipped in faasprof/workload_configs/ goes through ``plan`` and ``validate`` as a newcomer runs
them: as subprocesses, with no platform configured (a fresh HOME: no ~/.wskprops, no stored
capacity), so nothing is contacted. Each must succeed without a traceback; a new file is covered
by the glob without anyone adding it here."""

from __future__ import annotations

import pytest

from tests.helpers import REPO_ROOT, run_cli

SHIPPED = sorted(path.relative_to(REPO_ROOT) for path in (REPO_ROOT / "faasprof" / "workload_configs").glob("*.json"))


def _fresh_home(tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("home")
    return {"HOME": str(home), "FAASPROF_TEST_HOME": str(home)}


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """One ``validate`` of every shipped file (it takes many; each line names its file)."""
    return run_cli("validate", *SHIPPED, timeout=300, env=_fresh_home(tmp_path_factory))


def test_the_glob_finds_the_shipped_workloads():
    assert len(SHIPPED) > 10 and any(path.name == "first_run_modes.json" for path in SHIPPED)


@pytest.mark.parametrize("config", SHIPPED, ids=[path.name for path in SHIPPED])
def test_every_shipped_workload_validates(config, validated):
    assert "Traceback" not in validated.stderr, validated.stderr[-3000:]
    refused = [line for line in validated.stderr.splitlines() if line.startswith(f"{config}: ")]
    assert not refused, f"validate refuses {config.name}:\n" + "\n".join(refused)
    said = [line for line in validated.stdout.splitlines() if line.startswith(f"{config}: ")]
    assert len(said) == 1 and said[0].startswith((f"{config}: ok (", f"{config}: skipped (the JSON Schema")), (
        validated.stdout
    )


@pytest.mark.parametrize("config", SHIPPED, ids=[path.name for path in SHIPPED])
def test_every_shipped_workload_plans(config, tmp_path_factory):
    done = run_cli("plan", config, timeout=120, env=_fresh_home(tmp_path_factory))
    assert "Traceback" not in done.stderr, f"plan {config.name} crashed:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"plan {config.name} exited {done.returncode}, saying:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"plan {config.name} printed nothing"
