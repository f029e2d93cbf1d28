"""The order the suite's files run in (``longest_files_first``, which tests/conftest.py applies): the file
expected to take longest first, by its tests' seconds in the last session or, for a test not timed
yet, by its ``slow`` mark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.helpers import UNTIMED_QUICK_S, UNTIMED_SLOW_S, longest_files_first


@dataclass
class Item:
    """The part of a pytest item the ordering reads."""

    path: Path
    name: str
    slow: bool = False
    host_exclusive: bool = False

    @property
    def nodeid(self) -> str:
        return f"tests/{self.path.name}::{self.name}"

    def get_closest_marker(self, name: str) -> object | None:
        return (
            object() if (name == "slow" and self.slow) or (name == "host_exclusive" and self.host_exclusive) else None
        )


def names(items: list[Item]) -> list[str]:
    return [f"{item.path.stem}:{item.name}" for item in items]


def test_a_file_of_one_long_timed_test_goes_before_a_file_of_several_slow_untimed_ones():
    role, faults, quick = Path("tests/test_role.py"), Path("tests/test_faults.py"), Path("tests/test_quick.py")
    items = [
        *(Item(quick, f"q{n}") for n in range(40)),
        Item(faults, "a", slow=True),
        Item(faults, "b", slow=True),
        Item(faults, "c", slow=True),
        Item(role, "scenario", slow=True),
        Item(role, "smoke", slow=True),
    ]
    longest_files_first(items, {"tests/test_role.py::scenario": 90.0, "tests/test_role.py::smoke": 12.0})
    assert names(items)[:5] == [
        "test_role:scenario",
        "test_role:smoke",
        "test_faults:a",
        "test_faults:b",
        "test_faults:c",
    ]
    assert names(items)[5:] == [f"test_quick:q{n}" for n in range(40)], "each file's own order is kept"


def test_without_timings_the_slow_marks_and_the_number_of_tests_decide():
    few, many, none = Path("tests/test_few.py"), Path("tests/test_many.py"), Path("tests/test_none.py")
    quick_tests = int(UNTIMED_SLOW_S / UNTIMED_QUICK_S) + 1  # a little longer than one slow test
    items = [
        Item(none, "only"),
        Item(few, "slow", slow=True),
        *(Item(many, f"q{n}") for n in range(quick_tests)),
    ]
    longest_files_first(items, {})
    assert list(dict.fromkeys(item.path for item in items)) == [many, few, none]


def test_the_files_holding_a_host_exclusive_test_go_last():
    """Such a test waits for every test running at that moment, and every worker waits behind it:
    at the end only short tests run."""
    long, reaper, quick = Path("tests/test_long.py"), Path("tests/test_reaper.py"), Path("tests/test_quick.py")
    items = [
        Item(quick, "q"),
        Item(reaper, "plain", slow=True),
        Item(reaper, "plants_leftovers", slow=True, host_exclusive=True),
        Item(long, "scenario", slow=True),
    ]
    longest_files_first(items, {"tests/test_long.py::scenario": 60.0})
    assert list(dict.fromkeys(item.path for item in items)) == [long, quick, reaper]
