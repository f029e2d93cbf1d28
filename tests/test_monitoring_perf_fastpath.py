"""``parse_perf_stat``'s Arrow fast path gives exactly the frame of the line-by-line parser.

The reference here is built in the test from ``_perf_fields`` row by row (the way
``parse_perf_stat`` built its frame before it had a fast path), and compared with
``assert_frame_equal(check_exact=True)`` plus the ``noise_lines`` attribute, on every recorded
perf sample and on synthetic files that mix every odd row kind the general parser handles.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from faasprof.monitoring.parsers.perf import (
    COLUMNS,
    _fast_columns,
    _perf_fields,
    parse_perf_stat,
    parse_perf_stat_reference,
    perf_wide,
)

DATA = Path(__file__).resolve().parent / "data" / "monitoring" / "perf"
SAMPLES = sorted(path.name for path in DATA.iterdir() if path.is_file())
NUMERIC = ("time_s", "n_cpus", "value", "runtime_ns", "running_pct", "variance_pct", "metric_value")

# Every row kind the general parser knows, plus lines just outside the fast pattern's layout.
ODD_LINES = [
    "# started on Sat Nov 21 02:23:31 2026",
    "",
    "Events disabled",
    "     0.100159811,200.77,msec,task-clock,200766497,100.00,2.008,CPUs utilized",
    "     0.100159811,<not supported>,,cycles,0,100.00,,",
    "     0.100159811,<not counted>,,instructions,0,100.00,,",
    "     0.100159811,CPU0,100.48,msec,task-clock,100479994,100.00,1.005,CPUs utilized",
    "     0.100159811,CPU1,<not counted>,,page-faults,0,100.00,,",
    "     0.100189199,S0-D0-C0,1,100.35,msec,task-clock,100350678,100.00,1.004,CPUs utilized",
    "     0.100189199,S0-C3,2,13,,context-switches,100363587,100.00,129.545,/sec",
    "     0.100189199,S0-D1,4,83,,page-faults,100366321,100.00,827.093,/sec",
    "     0.100189199,S1,8,<not supported>,,cycles,0,100.00,,",
    "     0.100189199,N0,8,12,,cpu-migrations,100366321,100.00,0.1,/sec",
    "     0.100189199,bash-4144,5,,instructions,100366321,100.00,,",
    "     0.100189199,5,7,,instructions,100366321,100.00,,",  # a numeric label
    "     0.100145545,100.03,msec,task-clock,faasprof-rec-a,100034102,100.00,1.000,CPUs utilized",
    "     0.100145545,617,,context-switches,system.slice/docker-1.scope,97271656,100.00,6.343,K/sec",
    "     0.100145545,CPU1,617,,context-switches,faasprof-rec-b,97271656,100.00,6.343,K/sec",
    "     0.100145545,<not counted>,,page-faults,faasprof-rec-b,0,100.00,,",
    "49,,page-faults,0.00%,775869,100.00,68.930,K/sec",  # -r variance
    "     0.2,49,,page-faults,1.25%,775869,100.00,68.930,K/sec",
    "     0.2,49,,page-faults,odd%,775869,100.00,68.930,K/sec",  # a cgroup name ending in %
    "S0,1,88766,,instructions,2030942,100.00,0.35,insn per cycle",
    "S0,1,,,,,,,1.27,stalled cycles per insn",  # metric-only continuation
    ",,,,,0.02,stalled cycles per insn",
    "     0.3,,,,,,,0.02,stalled cycles per insn",
    "319218186844,,instructions:u,24680525338,85.00,2.62,insn per cycle",
    "         summary,401.09,msec,task-clock,401085044,100.00,1.997,CPUs utilized",
    "     0.3,summary,401.09,msec,task-clock,401085044,100.00,1.997,CPUs utilized",
    "     0.4,12,,cycles,1234.9,50.00,,",  # runtime with a fraction: truncated
    "     0.4,1.5e3,,cycles,1e6,50.00,2E-3,",
    "     0.4,+7,,cycles,+100,50.00,.5,x",
    "     0.4,7.,,cycles,100.,50.,5.,x",
    "     0.4,-3,,cycles,100,50,-0.25,  spaced unit  ",
    "\t0.4,7,,cycles,100,50.00,1.0,tab before the time",
    "     0.4 , CPU0 , 7 , msec , cycles , 100 , 50.00 , 1.0 , spaces around fields ",
    "     0.4,CPU0,x,7,,cycles,100,50.00,1.0,n_cpus not a number",
    "     0.4,a,b,c,7,,cycles,100,50.00,1.0,too many labels",
    "     0.4,7,,cyclés,100,50.00,1.0,non-ASCII event",
    "     0.4,7,,cycles,100,50.00,1.0,µs",
    "     0.4,7,,cycles,abc,50.00,1.0,bad runtime",
    "     0.4,7,,,100,50.00,1.0,no event",
    "     0.4,7,7,cycles,100,50.00,1.0,numeric unit",
    "     0.4,7,,cycles,100,50.00,1.0,CPUs utilized\r",  # CRLF
    "     0.4,7,,cycles,100,50.00,1.0,CPUs utilized\r\r",
    "     0.4,7,,cycles,100,50.00,1.0,\r",
    "     0.4,99999999999999999999,,cycles,12345678901234567891,100.00,,",
    "     0.4,0.1000000000000000055511151231257827,,cycles,100,100.00,,",
    "not,a,counter,row,at,all,but,long",
    "short,line",
    "     0.5,CPU0,7",
    "     0.5,S0," + "9" * 30 + ",7,,cycles,100,50.00,1.0,",  # an n_cpus beyond int64
]


def reference_frame(text: str, sep: str = ",") -> pd.DataFrame:
    """The frame from ``_perf_fields`` line by line (complete lines only), as the parser built it
    before the fast path."""
    lines = text.split("\n")
    lines.pop()  # "" after the final newline, or a torn last line
    rows, noise = [], 0
    for line in lines:
        row = _perf_fields(line, sep)
        if row is not None:
            rows.append(row)
        elif line.strip() and not line.strip().startswith("#") and len(line.split(sep)) < 7:
            noise += 1
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in NUMERIC:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame.attrs["noise_lines"] = noise
    return frame


def assert_same(text: str, sep: str = ",") -> pd.DataFrame:
    fast = parse_perf_stat(text, sep)
    expected = reference_frame(text, sep)
    pd.testing.assert_frame_equal(fast, expected, check_exact=True)
    assert fast.attrs == expected.attrs
    pd.testing.assert_frame_equal(parse_perf_stat_reference(text, sep), expected, check_exact=True)
    return fast


@pytest.mark.parametrize("name", SAMPLES)
def test_fast_path_equals_reference_on_recorded_samples(name):
    text = (DATA / name).read_text()
    assert_same(text)
    assert_same(text.replace("\n", "\r\n"))
    assert_same(text.rstrip("\n"))  # the last line torn off


def test_fast_path_equals_reference_on_every_odd_row_kind():
    text = "\n".join(ODD_LINES) + "\n"
    frame = assert_same(text)
    # The mix really has rows of every kind and noise (so the comparison covers them).
    assert set(frame["agg"]) == {"system", "cpu", "core", "die", "socket", "node", "thread", "cgroup"}
    assert set(frame["status"]) == {"ok", "not_supported", "not_counted"}
    assert frame["variance_pct"].notna().any() and frame.attrs["noise_lines"] >= 2
    assert "CPU1/faasprof-rec-b" in set(frame["unit_id"])
    assert_same(text + "     0.6,12,,context-swi")  # torn last line
    assert_same(text.replace("\n", "\r\n"))
    assert_same(text.replace(",", ";"), sep=";")


def test_fast_path_equals_reference_on_shuffled_mixes():
    sample = (DATA / "perf_stat_system_interval.csv").read_text().splitlines()
    pool = ODD_LINES + sample + (DATA / "perf_stat_cgroup_interval.csv").read_text().splitlines()
    rng = random.Random(22)
    for _ in range(20):
        lines = [rng.choice(pool) for _ in range(rng.randint(1, 200))]
        assert_same("\n".join(lines) + rng.choice(["\n", "", "\n\n", "\r\n"]))


def test_fast_path_empty_and_all_noise_inputs():
    for text in ("", "\n", "# started on x\n\n", "Events disabled\nwarning\n", "     0.1,12,,cycles,1,100.00,,"):
        assert_same(text)


def test_fast_path_frame_gives_the_same_wide_frame():
    text = (DATA / "perf_stat_percore_interval.csv").read_text() + "\n".join(ODD_LINES) + "\n"
    pd.testing.assert_frame_equal(perf_wide(parse_perf_stat(text)), perf_wide(reference_frame(text)), check_exact=True)


def test_the_comparisons_exercise_the_fast_path():
    # Without this, a fast path that matched nothing would pass every comparison above.
    sample = (DATA / "perf_stat_system_interval.csv").read_text().splitlines()
    matched, columns = _fast_columns(sample)
    assert matched.sum() == len(reference_frame("\n".join(sample) + "\n")) == len(columns["event"])
    cgroup = (DATA / "perf_stat_cgroup_interval.csv").read_text().splitlines()
    assert _fast_columns(cgroup)[0].sum() == 18
    matched, _ = _fast_columns(ODD_LINES)
    taken = {line for line, fast in zip(ODD_LINES, matched) if fast}
    assert "     0.100189199,S0-D0-C0,1,100.35,msec,task-clock,100350678,100.00,1.004,CPUs utilized" in taken
    assert "     0.100145545,CPU1,617,,context-switches,faasprof-rec-b,97271656,100.00,6.343,K/sec" in taken
    assert "     0.4,7,,cycles,100,50.00,1.0,CPUs utilized\r" in taken
    assert not any(("summary" in line or "%" in line or "\t" in line) for line in taken)


def test_text_that_arrow_cannot_encode_takes_the_general_path():
    # Lone surrogates have no UTF-8; on pandas whose strings are Arrow-backed the reference frame
    # cannot hold them either, and then both must fail alike.
    text = "     0.1,12,,cycles,1,100.00,,\n     0.1,12,,cycles\udcff,1,100.00,,\n"
    try:
        expected = reference_frame(text)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            parse_perf_stat(text)
        return
    pd.testing.assert_frame_equal(parse_perf_stat(text), expected, check_exact=True)


def test_fast_path_numbers_round_like_python_float():
    # Arrow parses the numbers of the fast path; _perf_fields uses float(): both must round alike,
    # including long mantissas, exponents, subnormals and overflow to inf.
    rng = random.Random(7)

    def number():
        text = ("-" if rng.random() < 0.2 else "") + str(rng.randint(0, 10 ** rng.randint(0, 25)))
        if rng.random() < 0.7:
            text += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
        if rng.random() < 0.3:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 330))
        return text

    def runtime():  # int(float(runtime)) of an infinite runtime raises: below
        text = number().lstrip("-")
        return text if float(text) < 1e300 else "1"

    lines = [
        f"{number().lstrip('-'):>16},{number()},,cycles,{runtime()},{number()},{number()},GHz" for _ in range(5000)
    ]
    frame = assert_same("\n".join(lines) + "\n")
    assert len(frame) == len(lines)


def test_a_runtime_beyond_a_float_fails_as_in_the_line_parser():
    text = "     0.1,12,,cycles,1,100.00,,\n     0.2,12,,cycles,1e400,100.00,,\n"
    with pytest.raises(OverflowError):
        reference_frame(text)
    with pytest.raises(OverflowError):
        parse_perf_stat(text)
