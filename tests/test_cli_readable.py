"""CLI details a researcher meets first: durations with units for --pause-grace, help that states
each default once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from faasprof.commands import doctor as cmd_doctor
from faasprof.monitoring.collectors.rdt import RdtCollector


def _cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "faasprof", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_run_pause_grace_takes_a_duration_with_a_unit(tmp_path):
    bad = _cli("run", str(tmp_path / "missing.json"), "--pause-grace", "soon")
    assert bad.returncode == 2 and "not a duration such as 50, 50ms or 10s" in bad.stderr
    # 10s parses; what fails next is the missing workload file, not the flag.
    good = _cli("run", str(tmp_path / "missing.json"), "--pause-grace", "10s")
    assert good.returncode == 2 and "pause-grace" not in good.stderr and "missing.json" in good.stderr


def test_local_start_help_states_each_default_once():
    done = _cli("local", "start", "--help")
    assert done.returncode == 0
    block = done.stdout[done.stdout.index("--host HOST") : done.stdout.index("--allow-remote  ")]
    assert block.count("(default") == 1


def test_doctor_warns_on_few_shared_cpus_and_fits_fixes_to_the_vendor():
    few = cmd_doctor.check_core_sharing({"logical_cpus": 2})
    assert (
        len(few) == 1
        and few[0].state == cmd_doctor.WARN
        and "share them" in few[0].text
        and "capacity_fraction" in few[0].fix
    )
    assert cmd_doctor.check_core_sharing({"logical_cpus": 32}) == []
    amd = {"cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC 7543", "rdt_flags": [], "turbo": True, "resctrl": {}}
    intel = {
        "cpu_vendor": "GenuineIntel",
        "cpu_model": "Intel(R) Xeon(R) Gold 6142",
        "rdt_flags": [],
        "turbo": True,
        "resctrl": {},
    }
    amd_text = " ".join(
        f.line() for f in RdtCollector.doctor(None, amd, False, None)[:2] + cmd_doctor.check_cpu(None, amd, False, None)
    )
    intel_text = " ".join(
        f.line()
        for f in RdtCollector.doctor(None, intel, False, None)[:2] + cmd_doctor.check_cpu(None, intel, False, None)
    )
    assert "Intel" not in amd_text and "intel_pstate" not in amd_text and "AMD EPYC" in amd_text
    assert "Intel Xeon" in intel_text and "intel_pstate" in intel_text


@pytest.mark.parametrize(
    "control, words",
    [
        ("notsupported", "SMT not supported by this CPU"),
        ("off", "SMT off"),
        ("forceoff", "SMT off (forced at boot)"),
        ("notimplemented", "SMT control not implemented by this kernel"),
        (None, "SMT unknown (no /sys/devices/system/cpu/smt/control)"),
    ],
)
def test_doctor_says_the_smt_state_in_words(control, words):
    texts = [f.text for f in cmd_doctor.check_cpu(None, {"smt": control, "logical_cpus": 8}, False, None)]
    assert words in texts


def test_doctor_advises_the_cpu_quota_for_the_command_that_has_it():
    fix = cmd_doctor.check_core_sharing({"logical_cpus": 2})[0].fix
    assert "`faasprof local start --cpu-policy quota --user-cpus N`" in fix and '"user_cpus": N' in fix
    assert "(localwhisk --user-cpus N)" not in fix
    start_help = _cli("local", "start", "--help").stdout
    assert "--cpu-policy" in start_help and "--user-cpus" in start_help


def test_doctor_lists_each_extra_not_installed_with_what_needs_it_and_the_command():
    nothing = cmd_doctor.check_extras(None, "no Docker daemon", find=lambda name: None)
    assert [f.state for f in nothing] == [cmd_doctor.INFO] * len(cmd_doctor.EXTRAS)
    for finding, extra in zip(nothing, cmd_doctor.EXTRAS):
        assert (
            finding.text.startswith(f"{extra.name} not installed (") and f"needed by {extra.needed_by}" in finding.text
        )
        assert finding.fix.startswith(f"./setup.sh --with {extra.name} (")
    storage = next(f for f in nothing if f.text.startswith("storage"))
    assert "versitygw, iperf3 missing" in storage.text and "go builds versitygw" in storage.fix
    everything = cmd_doctor.check_extras(None, None, find=lambda name: f"/usr/bin/{name}")
    assert [f.text for f in everything if f.state == cmd_doctor.OK and f.text != "node installed"] == [
        "ocr installed",
        "storage installed",
        "docker installed",
        "perf installed",
        "bench installed",
    ]


def test_doctor_fails_storage_when_the_workload_starts_a_server_that_is_not_installed():
    no_versitygw = lambda name: None if name == "versitygw" else f"/usr/bin/{name}"  # noqa: E731
    asks_iperf3 = cmd_doctor.check_extras({"storage": {"iperf3": True}}, None, find=no_versitygw)
    assert not [f for f in asks_iperf3 if f.state == cmd_doctor.NO]  # iperf3 is here; versitygw is not asked for
    asks_s3 = cmd_doctor.check_extras({"storage": {"object_store": True}}, None, find=no_versitygw)
    (missing,) = [f for f in asks_s3 if f.state == cmd_doctor.NO]
    assert (
        missing.blocks == ("storage",)
        and "versitygw not installed" in missing.text
        and missing.fix.startswith("./setup.sh --with storage")
    )


def test_doctor_cli_prints_a_line_for_every_extra():
    done = _cli("doctor", "--json")
    assert done.returncode in (0, 3), done.stderr
    extras = [f for f in json.loads(done.stdout)["findings"] if f["area"] == "extras"]
    assert [f["text"].split(" ")[0] for f in extras] == ["node", "ocr", "storage", "docker", "perf", "bench"]
    for finding in extras:
        assert finding["state"] == "ok" or finding["fix"].startswith(
            f"./setup.sh --with {finding['text'].split(' ')[0]} ("
        )
