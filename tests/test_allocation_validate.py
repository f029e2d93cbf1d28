"""Validation of LLC masks and bandwidth percentages before a sweep (monitoring.allocation)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from faasprof.errors import ConfigError, NotReadyError
from faasprof.monitoring import allocation as al

DATA = Path(__file__).resolve().parent / "data" / "resctrl"


def caps_of(tmp_path: Path, name: str, **info_overrides: str) -> al.Capabilities:
    root = tmp_path / name
    shutil.copytree(DATA / name, root)
    for relative, text in info_overrides.items():
        (root / "sys" / "fs" / "resctrl" / "info" / relative.replace("__", "/")).write_text(text + "\n")
    return al.discover(root)


@pytest.fixture
def c11(tmp_path):
    return caps_of(tmp_path, "xeon-11way")


@pytest.fixture
def c20(tmp_path):
    return caps_of(tmp_path, "xeon-20way-mba")


def test_contiguity_examples_from_the_kernel_documentation():
    # resctrl.rst: "0x3, 0x6 and 0xC are legal 4-bit masks with two bits set, but 0x5, 0x9 and 0xA are not"
    assert all(al.mask_is_contiguous(m) for m in (0x3, 0x6, 0xC, 0x1, 0x7FF, 0xF8000))
    assert not any(al.mask_is_contiguous(m) for m in (0x5, 0x9, 0xA, 0x0, 0x401))


@pytest.mark.parametrize(
    "value, position, mask",
    [
        (1, "low", 0x1),
        (4, "low", 0xF),
        (11, "low", 0x7FF),
        ("all", "low", 0x7FF),
        ("FULL", "low", 0x7FF),
        (2, "high", 0x600),
        (4, 3, 0x78),
        ("0x0f0", "low", 0xF0),
        ("0X7FF", "low", 0x7FF),
    ],
)
def test_llc_values_to_masks(c11, value, position, mask):
    assert al.llc_mask(value, c11.l3, position) == mask


@pytest.mark.parametrize(
    "value, position, words",
    [
        (0, "low", "outside 1..11"),
        (12, "low", "outside 1..11"),
        (-1, "low", "outside 1..11"),
        ("0x0", "low", "selects no way"),
        ("0x5", "low", "non-contiguous"),
        ("0x500", "low", "non-contiguous"),
        ("0x800", "low", "outside this CPU's 11 ways"),
        ("0xfff", "low", "cbm_mask 0x7ff"),
        ("f0", "low", "with 0x"),
        ("4", "low", "with 0x"),
        (True, "low", "way count"),
        (4.0, "low", "way count or a hex mask"),
        (4, 9, "position <= 7"),
        (4, "middle", "llc_position"),
    ],
)
def test_invalid_llc_values(c11, value, position, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(".", r"\.")):
        al.llc_mask(value, c11.l3, position)


def test_min_cbm_bits_is_enforced(tmp_path):
    caps = caps_of(tmp_path, "xeon-11way", L3__min_cbm_bits="2")
    with pytest.raises(ValueError, match="min_cbm_bits 2"):
        al.llc_mask(1, caps.l3)
    with pytest.raises(ValueError, match="min_cbm_bits=2"):
        al.llc_mask("0x10", caps.l3)
    assert al.llc_mask(2, caps.l3) == 0x3


def test_sparse_masks_allow_gaps(tmp_path):
    caps = caps_of(tmp_path, "xeon-11way", L3__sparse_masks="1")
    assert al.llc_mask("0x5", caps.l3) == 0x5


@pytest.mark.parametrize(
    "requested, applied", [(10, 10), (11, 20), (35, 40), (40, 40), (41, 50), (95, 100), (100, 100), (12.5, 20)]
)
def test_mba_rounds_up_to_the_next_step(c20, requested, applied):
    assert al.mba_step(requested, c20.mb) == applied


def test_mba_steps_start_at_min_bandwidth():
    mb = al.BandwidthCaps(min_percent=15, granularity_percent=10, num_closids=8, cache_ids=(0,))
    assert [al.mba_step(v, mb) for v in (15, 16, 25, 26, 95, 96, 100)] == [15, 25, 25, 35, 95, 100, 100]


@pytest.mark.parametrize(
    "value, words",
    [
        (5, "outside 10..100"),
        (0, "outside 10..100"),
        (101, "outside 10..100"),
        ("50", "percentage"),
        (None, "percentage"),
        (False, "percentage"),
    ],
)
def test_invalid_mba_values(c20, value, words):
    with pytest.raises(ValueError, match=words):
        al.mba_step(value, c20.mb)


def test_plan_reports_requested_and_applied(c20):
    plan = al.plan_allocation(c20, llc_ways=4, mba_percent=35, control_plane_cpus="0-1")
    data = plan.to_dict()
    assert data["l3_mask"] == "0xf" and data["llc_ways"] == 4 and data["llc_ways_requested"] == 4
    assert data["mba_percent_requested"] == 35 and data["mba_percent"] == 40
    assert data["cpus"] == "2-15"
    assert any("35 rounded up to 40" in n for n in data["notes"])


def test_plan_warns_about_shareable_ways(c11):
    assert al.plan_allocation(c11, llc_ways=4).notes == ()
    notes = al.plan_allocation(c11, llc_ways=11).notes
    assert len(notes) == 1 and "shareable_bits 0x600" in notes[0]


def test_plan_errors_are_one_line_and_name_the_field(c20):
    with pytest.raises(ConfigError) as info:
        al.plan_allocation(c20, llc_ways="0x5", mba_percent=5, llc_field="sweep.llc_ways[0]")
    assert info.value.problems[0].startswith("sweep.llc_ways[0]: 0x5 has non-contiguous ways")
    assert info.value.problems[1].startswith("mba_percent: 5 % is outside 10..100")
    assert all("\n" not in p for p in info.value.problems)
    assert str(info.value) == info.value.problems[0]
    assert info.value.exit_code == 2


def test_plan_checks_cpus(c20):
    assert al.plan_allocation(c20, llc_ways=1, cpus=[3, 4, 5]).cpus == (3, 4, 5)
    assert al.plan_allocation(c20, llc_ways=1, cpus="2-4,8").cpus == (2, 3, 4, 8)
    assert al.plan_allocation(c20, llc_ways=1).cpus == tuple(range(16))
    with pytest.raises(ConfigError, match="CPU\\(s\\) 16,99 are not online"):
        al.plan_allocation(c20, llc_ways=1, cpus=[1, 16, 99])
    with pytest.raises(ConfigError, match="no CPU left"):
        al.plan_allocation(c20, llc_ways=1, cpus="0-3", control_plane_cpus="0-3")
    with pytest.raises(ConfigError, match="cpus:"):
        al.plan_allocation(c20, llc_ways=1, cpus=["a"])
    with pytest.raises(ConfigError, match="give at least one"):
        al.plan_allocation(c20)


def test_mba_on_a_cat_only_host_is_not_ready(c11):
    with pytest.raises(NotReadyError, match="no memory bandwidth allocation"):
        al.plan_allocation(c11, mba_percent=50)
    with pytest.raises(NotReadyError):
        al.check_sweep_values(c11, llc_ways=[2], mba_percent=[50])


def test_check_sweep_values_lists_every_problem(c20):
    with pytest.raises(ConfigError) as info:
        al.check_sweep_values(c20, llc_ways=[20, 0, "0x5", 4, 21, "0x100000"], mba_percent=[35, 5, 100])
    problems = info.value.problems
    assert [p.split(":")[0] for p in problems] == [
        "sweep.llc_ways[1]",
        "sweep.llc_ways[2]",
        "sweep.llc_ways[4]",
        "sweep.llc_ways[5]",
        "sweep.mba_percent[1]",
    ]


def test_check_sweep_values_returns_every_combination(c20):
    plans = al.check_sweep_values(c20, llc_ways=[20, 10, 1], mba_percent=[100, 35], control_plane_cpus=[0])
    assert [(p.l3_mask, p.mba_percent) for p in plans] == [
        (0xFFFFF, 100),
        (0xFFFFF, 40),
        (0x3FF, 100),
        (0x3FF, 40),
        (0x1, 100),
        (0x1, 40),
    ]
    assert all(p.cpus == tuple(range(1, 16)) for p in plans)
    assert [p.l3_mask for p in al.check_sweep_values(c20, llc_ways=["all", 2])] == [0xFFFFF, 0x3]
    assert [p.mba_percent for p in al.check_sweep_values(c20, mba_percent=[15])] == [20]


def test_cpu_list_round_trip():
    assert al.parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert al.parse_cpu_list("") == () and al.parse_cpu_list("\n") == ()
    assert al.format_cpu_list([11, 10, 8, 3, 2, 1, 0, 0]) == "0-3,8,10-11"
    assert al.format_cpu_list([]) == ""
    with pytest.raises(ValueError):
        al.parse_cpu_list("3-1")


def test_parse_schemata_kernel_formats():
    # Samples from Documentation/arch/x86/resctrl.rst (CDP, AMD space padding, aligned names).
    assert al.parse_schemata("L3DATA:0=fffff;1=fffff;2=3c0;3=fffff\nL3CODE:0=fffff;1=fffff;2=fffff;3=fffff\n") == {
        "L3DATA": {0: "fffff", 1: "fffff", 2: "3c0", 3: "fffff"},
        "L3CODE": {0: "fffff", 1: "fffff", 2: "fffff", 3: "fffff"},
    }
    parsed = al.parse_schemata(
        "    SMBA:0=2048;1=  64;2=2048;3=2048\n      MB:0=2048;1=2048;2=2048;3=2048\n      L3:0=ffff;1=ffff;2=ffff;3=ffff\n"
    )
    assert parsed["SMBA"][1] == "64" and parsed["MB"][0] == "2048" and parsed["L3"][3] == "ffff"
    assert al.parse_schemata("L2:0=03;1=03\n") == {"L2": {0: "03", 1: "03"}}
