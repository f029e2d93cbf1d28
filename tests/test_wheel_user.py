"""What a wheel user (no checkout: ``faasprof.paths.CHECKOUT_ROOT`` is None) is told by doctor: the
packages' own install commands instead of ``./setup.sh --with``, and advice that validate accepts."""

from __future__ import annotations

import json

import pytest

from faasprof.commands import doctor as cmd_doctor
from faasprof.errors import ConfigError
from faasprof.workload.spec import workload_from_dict


def test_doctors_localwhisk_advice_is_a_block_validate_accepts():
    """Doctor's few-CPUs fix names ``"cpu_policy": "quota", "user_cpus": N`` for platform.localwhisk:
    that block, with N filled in, must validate (it was refused as an unknown key)."""
    fix = cmd_doctor.check_core_sharing({"logical_cpus": 2})[0].fix
    start = fix.index('"cpu_policy"')
    block = json.loads("{" + fix[start : fix.index(" in the workload's", start)].replace(" N", " 1") + "}")
    assert block == {"cpu_policy": "quota", "user_cpus": 1}
    data = {
        "test_name": "advice",
        "test_duration_in_seconds": 2,
        "instances": {"a": {"application": "json_dumps", "distribution": "Poisson", "rate": 1}},
        "platform": {"localwhisk": block},
    }
    workload_from_dict(data, origin="advice.json")
    with pytest.raises(ConfigError) as caught:
        workload_from_dict({**data, "platform": {"localwhisk": {**block, "user_cpus": -1}}}, origin="advice.json")
    assert caught.value.problems == ["advice.json: platform.localwhisk.user_cpus: must be a number >= 0 (got -1)"]


def test_doctor_gives_a_wheel_user_commands_not_setup_sh():
    for finding in cmd_doctor.check_extras(None, "no Docker daemon", find=lambda name: None, checkout=None):
        assert "setup.sh --with" not in finding.fix and "apt-get install" in finding.fix, finding
