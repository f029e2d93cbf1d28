"""The collector registry is the one list of collectors: the workload schema's monitoring section,
the README's collector table, ``faasprof parse`` kinds, ``faasprof doctor`` and the frame loader
all follow it; and perf readiness is decided in one function."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jsonschema
import pytest

from faasprof import rundir
from faasprof.commands import parse as cmd_parse
from faasprof.monitoring import frames
from faasprof.monitoring.collectors import (
    COLLECTORS,
    REGISTRY,
    build_collectors,
    normalise_block,
    parse_kinds,
    readme_table,
    replace_schema_section,
    schema_fragment,
)
from faasprof.monitoring.collectors.base import Finding
from faasprof.monitoring.host import Root, collect_host
from faasprof.monitoring.tools import PerfReadiness, perf_readiness
from faasprof.paths import WORKLOAD_SCHEMA_PATH

REPO_ROOT = Path(__file__).resolve().parent.parent

HOSTS = Path(__file__).resolve().parent / "data" / "monitoring" / "hosts"
FIX = "python -m faasprof.monitoring.collectors --write && python -m faasprof.invoker.schema_doc --write"


def test_schema_monitoring_section_is_the_registrys():
    text = WORKLOAD_SCHEMA_PATH.read_text(encoding="utf-8")
    assert json.loads(text)["$defs"]["monitoring"] == schema_fragment(), f"run: {FIX}"
    assert replace_schema_section(text) == text, f"run: {FIX}"
    # The collectors, in the registry's order, then the remote hosts they also run on.
    assert list(json.loads(text)["$defs"]["monitoring"]["properties"]) == [cls.name for cls in COLLECTORS] + ["hosts"]


def test_readme_collector_table_is_the_registrys():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_table() in readme, f"run: {FIX}"
    for cls in COLLECTORS:
        assert f"| `{cls.name}` | {cls.summary} |" in readme


@pytest.mark.parametrize("cls", COLLECTORS, ids=[cls.name for cls in COLLECTORS])
def test_each_collector_states_what_the_registry_needs(cls, tmp_path):
    assert cls.name and cls.summary and cls.tool and cls.raw_outputs
    assert set(cls.defaults) <= set(cls.options_schema) | {"required"}, "every default is an option of the schema"
    # The defaults, as an object form, are a valid monitoring block of the workload schema.
    schema = json.loads(WORKLOAD_SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator({**schema["$defs"]["monitoring"], "$defs": schema["$defs"]})
    block = {cls.name: {k: v for k, v in cls.defaults.items() if v is not None}}
    assert list(validator.iter_errors(block)) == []
    assert list(validator.iter_errors({cls.name: {"no_such_option": 1}})), "unknown options are refused"
    # true → the collector with its defaults; the frame loader has nothing to read in an empty dir.
    built = build_collectors({cls.name: True}, {"duration_s": 1})
    assert [type(c) for c in built] == [cls] and built[0].block == cls.defaults
    assert cls.load_frame(tmp_path, {}, 0.0, rundir.new_manifest("t", {}, rundir.ClockAnchor(0, 0))) is None
    # The doctor check reads a copied host tree and returns findings named after the collector.
    findings = cls.doctor(Root(HOSTS / "xeon_11way"), collect_host(HOSTS / "xeon_11way"), False, None)
    assert findings and all(isinstance(f, Finding) and f.area == cls.name for f in findings)


def test_registry_order_names_and_block_normalisation():
    assert list(REGISTRY) == [cls.name for cls in COLLECTORS]
    assert len(set(REGISTRY)) == len(COLLECTORS)
    assert normalise_block({"perf": False, "cgroups": None, "nonsense": True}) == {}
    assert normalise_block({"perf": True})["perf"] == REGISTRY["perf"].defaults


def test_parse_kinds_come_from_the_registry():
    kinds = parse_kinds()
    assert cmd_parse.KINDS == tuple(kinds)
    assert {kind for cls in COLLECTORS for kind in (k.name for k in cls.parse_kinds)} == set(kinds)
    parser = argparse.ArgumentParser()
    cmd_parse.add_arguments(parser)
    help_text = parser.format_help()
    # An option two kinds read is one option whose help names both.
    assert "pqos/resctrl: the memory bandwidth peak" in " ".join(help_text.split())
    args = parser.parse_args(["perf", "x.csv", "--long"])
    assert args.long is True and args.sep == ","


def test_frames_skip_monitors_the_registry_does_not_know(tmp_path):
    other = tmp_path / "monitors" / "runtime_script"
    other.mkdir(parents=True)
    (other / "meta.json").write_text(json.dumps({"wall_ns_at_start": 5, "monotonic_ns_at_start": 5}))
    (other / "out.txt").write_text("something\n")
    assert frames.load_run_monitors(tmp_path, rundir.new_manifest("t", {}, rundir.ClockAnchor(0, 0))) == {}


# -- perf readiness: one function, three askers ------------------------------------------------------


def _ready(**changes) -> PerfReadiness:
    facts = {"perf_path": "/usr/bin/perf", "paranoid": 2, "root": False, "system_wide": True, "probed": False}
    return PerfReadiness(**{**facts, **changes})


def test_perf_readiness_problems_name_the_fix():
    assert _ready(perf_path=None).problem("drop --perf") == (
        "perf: not found on PATH; install it (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r)) or drop --perf"
    )
    assert _ready().problem("x") == (
        "perf: system-wide counting needs root or perf_event_paranoid <= 0 (it is 2); run as root or `sysctl kernel.perf_event_paranoid=0`"
    )
    # Counting one's own command is allowed up to paranoid 2 (native --perf), system-wide only at <= 0.
    assert _ready(system_wide=False).problem("x") is None
    assert (
        _ready(system_wide=False, paranoid=3)
        .problem("x")
        .startswith("perf: counting needs root or perf_event_paranoid <= 2 (it is 3)")
    )
    assert _ready(root=True).problem("x") is None
    assert "the kernel has no perf events" in _ready(paranoid=None).problem("x")
    probed = _ready(root=True, probed=True, supported=("task-clock",), dropped={"cycles": "not supported here"})
    assert probed.problem("x") is None
    assert (
        probed.problem("drop --perf", require_all=True)
        == "perf: cannot count cycles here (cycles: not supported here); choose other events or drop --perf"
    )
    none = _ready(root=True, probed=True, supported=(), dropped={"cycles": "not supported here"})
    assert none.problem("x").startswith("perf: none of the events cycles is supported on this host")
    assert "the support probe failed (boom)" in _ready(root=True, probed=True, probe_error="boom").problem("x")


def test_perf_readiness_reads_paranoid_through_the_root_and_probes_only_when_asked():
    ready = perf_readiness(["task-clock"], Root(HOSTS / "this_vm"), probe=False)
    assert ready.paranoid == 2 and ready.probed is False
