"""CLI details a researcher meets first: durations with units for --pause-grace, help that states
each default once."""

from __future__ import annotations

import subprocess
import sys

import pytest

from faasprof.commands import doctor as cmd_doctor
from faasprof.monitoring.collectors.rdt import RdtCollector


def _cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=timeout)


def test_run_pause_grace_takes_a_duration_with_a_unit(tmp_path):
    bad = _cli("run", str(tmp_path / "missing.json"), "--pause-grace", "soon")
    assert bad.returncode == 2 and "not a duration such as 50, 50ms or 10s" in bad.stderr
    # 10s parses; what fails next is the missing workload file, not the flag.
    good = _cli("run", str(tmp_path / "missing.json"), "--pause-grace", "10s")
    assert good.returncode == 2 and "pause-grace" not in good.stderr and "missing.json" in good.stderr


def test_local_start_help_states_each_default_once():
    done = _cli("local", "start", "--help")
    assert done.returncode == 0
    block = done.stdout[done.stdout.index("--host HOST"):done.stdout.index("--allow-remote  ")]
    assert block.count("(default") == 1


def test_doctor_warns_on_few_shared_cpus_and_fits_fixes_to_the_vendor():
    few = cmd_doctor.check_core_sharing({"logical_cpus": 2})
    assert len(few) == 1 and few[0].state == cmd_doctor.WARN and "share them" in few[0].text and "capacity_fraction" in few[0].fix
    assert cmd_doctor.check_core_sharing({"logical_cpus": 32}) == []
    amd = {"cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC 7543", "rdt_flags": [], "turbo": True, "resctrl": {}}
    intel = {"cpu_vendor": "GenuineIntel", "cpu_model": "Intel(R) Xeon(R) Gold 6142", "rdt_flags": [], "turbo": True, "resctrl": {}}
    amd_text = " ".join(f.line() for f in RdtCollector.doctor(None, amd, False, None)[:2] + cmd_doctor.check_cpu(None, amd, False, None))
    intel_text = " ".join(f.line() for f in RdtCollector.doctor(None, intel, False, None)[:2] + cmd_doctor.check_cpu(None, intel, False, None))
    assert "Intel" not in amd_text and "intel_pstate" not in amd_text and "AMD EPYC" in amd_text
    assert "Intel Xeon" in intel_text and "intel_pstate" in intel_text


@pytest.mark.parametrize("control, words", [
    ("notsupported", "SMT not supported by this CPU"), ("off", "SMT off"), ("forceoff", "SMT off (forced at boot)"),
    ("notimplemented", "SMT control not implemented by this kernel"), (None, "SMT unknown (no /sys/devices/system/cpu/smt/control)"),
])
def test_doctor_says_the_smt_state_in_words(control, words):
    texts = [f.text for f in cmd_doctor.check_cpu(None, {"smt": control, "logical_cpus": 8}, False, None)]
    assert words in texts


def test_doctor_advises_the_cpu_quota_for_the_command_that_has_it():
    fix = cmd_doctor.check_core_sharing({"logical_cpus": 2})[0].fix
    assert "`faasprof local start --cpu-policy quota --user-cpus N`" in fix and '"user_cpus": N' in fix
    assert "(localwhisk --user-cpus N)" not in fix
    start_help = _cli("local", "start", "--help").stdout
    assert "--cpu-policy" in start_help and "--user-cpus" in start_help
