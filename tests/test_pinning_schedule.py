"""Golden schedules: the exact planned times of a few seeds, per arrival process.

A recorded run is only reproducible if the same workload and seed give the same schedule in every
later faasprof. These values were written down once (faasprof at the commit that added this
file); a change of the stream-key derivation, of the seed handling or of any arrival process
changes them and fails here. If a change is intended, it breaks every recorded schedule: say so
in the release notes and update these values deliberately.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from faasprof.workload import arrivals
from faasprof.workload.schedule import build_schedule, instance_rng, read_schedule_csv, stream_key
from faasprof.workload.spec import workload_from_dict
from tests.helpers import DATA_DIR

PROCESSES = {
    "poisson": {"application": "f", "distribution": "Poisson", "rate": 5},
    "uniform": {"application": "f", "distribution": "Uniform", "rate": 4},
    "uniform_window": {"application": "f", "distribution": "Uniform", "rate": 0.7, "activity_window": [30, 200]},
    "burst_fixed": {
        "application": "f",
        "distribution": "Burst",
        "burst_size": 3,
        "burst_gap_s": 2.0,
        "activity_window": [1.5, 200],
    },
    "burst_shifted": {
        "application": "f",
        "distribution": "Burst",
        "burst_size": 2,
        "burst_gap_s": 1.0,
        "burst_gap_distribution": "shifted_exponential",
        "burst_gap_mean_s": 0.5,
    },
    "trace_uniform": {"application": "f", "distribution": "Trace", "trace_file": "traces/azure_small.csv"},
    "trace_equi": {
        "application": "f",
        "distribution": "Trace",
        "trace_file": "traces/azure_small.csv",
        "trace_spread": "equidistant",
    },
}

# process -> seed -> (count, first five intended_ns, last two intended_ns), 240 s test
GOLDEN = {
    "poisson": {
        1: (1243, [88915475, 95498771, 249296676, 250189491, 398316317], [239617066479, 239953509592]),
        110: (1217, [302238602, 321622651, 530673749, 1291987589, 1295267911], [239825332099, 239829601544]),
    },
    "uniform": {
        1: (960, [34497113, 284497113, 534497113, 784497113, 1034497113], [239534497113, 239784497113]),
        110: (960, [189557503, 439557503, 689557503, 939557503, 1189557503], [239689557503, 239939557503]),
    },
    "uniform_window": {
        1: (119, [31104416515, 32532987944, 33961559373, 35390130801, 36818702230], [198247273658, 199675845087]),
        110: (119, [30327619025, 31756190453, 33184761882, 34613333310, 36041904739], [197470476168, 198899047596]),
    },
    "burst_fixed": {
        1: (300, [1500000000, 1500000000, 1500000000, 3500000000, 3500000000], [199500000000, 199500000000]),
        110: (300, [1500000000, 1500000000, 1500000000, 3500000000, 3500000000], [199500000000, 199500000000]),
    },
    "burst_shifted": {
        1: (338, [0, 0, 1463094045, 1463094045, 2501319381], [239950785170, 239950785170]),
        110: (322, [0, 0, 1481839120, 1481839120, 2685009043], [237153070847, 237153070847]),
    },
    "trace_uniform": {
        1: (157, [602685696, 731127183, 1935036877, 7537013790, 8772830251], [219576336454, 222535427856]),
        110: (157, [452134686, 1644867711, 1952450747, 4650441499, 6194782510], [224502270892, 228746188293]),
    },
    "trace_equi": {
        1: (157, [760200496, 2760200496, 4760200496, 6760200496, 8760200496], [229003875314, 237575303885]),
        110: (157, [1247866231, 3247866231, 5247866231, 7247866231, 9247866231], [231328444471, 239899873042]),
    },
}
GOLDEN_RNG_110_INSTANCE1 = [0.16330671433402044, 0.9371238665421329, 0.7036932836556001]


def _schedule(name: str, seed: int, duration_s: float = 240):
    spec = dict(PROCESSES[name])
    if "trace_file" in spec:
        spec["trace_file"] = str(DATA_DIR / spec["trace_file"])
    workload = workload_from_dict(
        {"test_name": "golden", "test_duration_in_seconds": duration_s, "random_seed": seed, "instances": {name: spec}},
        check_catalogue=False,
    )
    return build_schedule(workload)


@pytest.mark.parametrize("name, seed", [(name, seed) for name in GOLDEN for seed in GOLDEN[name]])
def test_golden_schedule(name, seed):
    count, first, last = GOLDEN[name][seed]
    schedule = _schedule(name, seed)
    assert len(schedule) == count
    assert schedule.intended_ns[:5].tolist() == first
    assert schedule.intended_ns[-2:].tolist() == last


def test_stream_key_has_its_recorded_value():
    # BLAKE2b-128 of the name, personalised "faasprof-stream", as four little-endian 32-bit words.
    assert stream_key("instance1") == (4162822104, 4265941921, 2114888964, 3764266431)
    assert stream_key("i0") == (3491753869, 2480444506, 2744931948, 3249188600)


def test_instance_stream_depends_on_the_seed_and_the_name_only():
    first = instance_rng(110, "instance1").random(3).tolist()
    assert first == instance_rng(110, "instance1").random(3).tolist()
    assert first != instance_rng(111, "instance1").random(3).tolist()
    assert first != instance_rng(110, "instance2").random(3).tolist()
    assert first == pytest.approx(GOLDEN_RNG_110_INSTANCE1, abs=0)


def test_merged_schedule_of_two_instances():
    workload = workload_from_dict(
        {
            "test_name": "golden",
            "test_duration_in_seconds": 10,
            "random_seed": 42,
            "instances": {"a": PROCESSES["poisson"], "b": PROCESSES["uniform"]},
        },
        check_catalogue=False,
    )
    schedule = build_schedule(workload)
    assert schedule.intended_ns[:8].tolist() == [
        92686093,
        134298524,
        138257315,
        206469189,
        456469189,
        706469189,
        826160514,
        952448339,
    ]
    assert schedule.instance_idx[:8].tolist() == [0, 0, 0, 1, 1, 1, 0, 0]


def test_uniform_phase_false_and_fraction_are_exact():
    rng = np.random.default_rng(0)
    assert arrivals.uniform(rng, 2.0, 1.0, 3.0, phase=False).tolist() == [1.0, 1.5, 2.0, 2.5]
    assert arrivals.uniform(rng, 2.0, 1.0, 3.0, phase=0.5).tolist() == [1.25, 1.75, 2.25, 2.75]
    # The last event is strictly before the window end, and one just below it is kept.
    assert arrivals.uniform(rng, 2.0, 0.0, 2.0 + 1e-9, phase=False).tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert arrivals.uniform(rng, 1.0, 0.0, 0.5, phase=0.6).tolist() == []


def test_interarrival_list_keeps_its_window_edges():
    assert arrivals.interarrival_list((1.0, 1.0, 1.0, 1.0), 2.0, 4.0).tolist() == [2.0, 3.0]


def _two_instances():
    return workload_from_dict(
        {
            "test_name": "golden",
            "test_duration_in_seconds": 2,
            "random_seed": 5,
            "instances": {
                "a": {"application": "fa", "distribution": "Uniform", "rate": 2},
                "b": {"application": "fb", "distribution": "Burst", "burst_size": 2, "burst_gap_s": 1.0},
            },
        },
        check_catalogue=False,
    )


GOLDEN_CSV = (
    "seq,instance,function,intended_s\n"
    "0,b,fb,0.000000000\n1,b,fb,0.000000000\n2,a,fa,0.042255741\n3,a,fa,0.542255741\n"
    "4,b,fb,1.000000000\n5,b,fb,1.000000000\n6,a,fa,1.042255741\n7,a,fa,1.542255741\n"
)


@pytest.mark.parametrize("chunk_rows", [3, 200_000])
def test_schedule_csv_is_exact_and_reads_back(tmp_path, chunk_rows):
    schedule = build_schedule(_two_instances())
    path = tmp_path / "schedule.csv"
    schedule.write_csv(path, chunk_rows=chunk_rows)
    assert path.read_bytes() == GOLDEN_CSV.encode("utf-8")
    intended, names = read_schedule_csv(path)
    assert intended.tolist() == schedule.intended_ns.tolist() and intended.dtype == np.int64
    assert names == ["b", "b", "a", "a", "b", "b", "a", "a"]
    with pytest.raises(FileExistsError):  # a schedule file is never overwritten
        schedule.write_csv(path)


def test_schedule_counts_and_types():
    schedule = build_schedule(_two_instances())
    assert schedule.counts() == {"a": 4, "b": 4} and len(schedule) == 8
    assert schedule.intended_ns.dtype == np.int64 and schedule.instance_idx.dtype == np.int32
    assert schedule.instance_names == ("a", "b") and schedule.functions == ("fa", "fb")


# --------------------------------------------------------------------------------------------
# trace files: what is read, and the one-line errors for what cannot be

AZURE_HEADER = "HashOwner,HashApp,HashFunction,Trigger,1,2,3\n"


def _trace(tmp_path, text, name="trace.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_azure_counts_by_row_index_by_hash_and_from_a_start_minute(tmp_path):
    path = _trace(tmp_path, AZURE_HEADER + "o,a,f1,http,1,2,3\no,a,f2,http,4,,6\n")
    assert arrivals.read_trace(path)[0] == "counts"
    assert arrivals.read_trace(path, 0)[1].tolist() == [1, 2, 3]
    assert arrivals.read_trace(path, 1)[1].tolist() == [4, 0, 6]  # an empty cell is no invocation
    assert arrivals.read_trace(path, "f2")[1].tolist() == [4, 0, 6]
    assert arrivals.read_trace(path, "f2", start_minute=3)[1].tolist() == [6]
    assert arrivals.read_trace(path, 0)[1].dtype == np.int64


def test_labelled_minute_columns_are_found_by_label(tmp_path):
    """InVitro's samples of the Azure trace keep the day's minute labels (480..959): minute 900 is
    the column labelled 900, not the 900th (it was refused as "past the last minute column (480)")."""
    labels = list(range(480, 960))
    text = (
        "HashOwner,HashApp,HashFunction,Trigger,"
        + ",".join(map(str, labels))
        + "\n"
        + "o,a,f,http,"
        + ",".join(str(m % 7) for m in labels)
        + "\n"
    )
    counts = arrivals.read_trace(_trace(tmp_path, text), 0, start_minute=900)[1]
    assert counts.tolist() == [m % 7 for m in range(900, 960)]


@pytest.mark.parametrize(
    "text, row, start_minute, message",
    [
        ("", 0, 1, "empty trace file"),
        (AZURE_HEADER + "o,a,f,http,1,x,3\n", 0, 1, "data row 0 has a non-numeric count"),
        (AZURE_HEADER + "o,a,f,http,1,-2,3\n", 0, 1, "data row 0 has a negative count"),
        (AZURE_HEADER + "o,a,f,http,1,2,3\n", 1, 1, "no data row 1 in the trace; set trace_row"),
        (AZURE_HEADER + "o,a,f,http,1,2,3\n", "g", 1, "no HashFunction g in the trace"),
        (
            AZURE_HEADER + "o,a,f,http,1,2,3\n",
            0,
            5,
            "trace_start_minute 5 is not one of its minute columns (labelled 1..3)",
        ),
        (
            "HashOwner,HashApp,HashFunction,Trigger,480,481,482\no,a,f,http,1,2,3\n",
            0,
            5,
            "trace_start_minute 5 is not one of its minute columns (labelled 480..482); give a minute from 480 to 482",
        ),
        (
            "HashOwner,HashApp,HashFunction,Trigger,m1,m2,m3\no,a,f,http,1,2,3\n",
            0,
            5,
            "trace_start_minute 5 is past the last minute column (3)",
        ),
        ("t\n1.0\nabc\n", 0, 1, "line 3: 'abc' is not a number of seconds"),
        ("-1.0\n2.0\n", 0, 1, "timestamps must be >= 0 (got -1.0)"),
    ],
)
def test_trace_errors_name_the_file_and_the_fix(tmp_path, text, row, start_minute, message):
    path = _trace(tmp_path, text)
    with pytest.raises(arrivals.TraceError) as caught:
        arrivals.read_trace(path, row, start_minute)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_missing_trace_file_is_a_config_error(tmp_path):
    with pytest.raises(arrivals.TraceError, match="cannot read the trace"):
        arrivals.read_trace(tmp_path / "absent.csv")


def test_timestamp_trace_skips_header_blank_and_comment_lines_and_sorts(tmp_path):
    path = _trace(tmp_path, "timestamp_s\n\n# a comment\n3.5\n 1.25\n2\n")
    kind, times = arrivals.read_trace(path)
    assert kind == "timestamps" and times.tolist() == [1.25, 2.0, 3.5]


def test_trace_is_read_again_when_the_file_changes(tmp_path):
    path = _trace(tmp_path, "1.0\n")
    assert arrivals.read_trace(path)[1].tolist() == [1.0]
    path.write_text("1.0\n2.0\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert arrivals.read_trace(path)[1].tolist() == [1.0, 2.0]


def test_trace_counts_spread_scale_and_window(tmp_path):
    rng = np.random.default_rng(1)
    counts = np.array([3, 0, 2])
    uniform = arrivals.trace_counts(rng, counts, 10.0, 190.0)
    assert len(uniform) == 5 and np.all(np.diff(uniform) >= 0)
    assert np.sum((uniform >= 10) & (uniform < 70)) == 3 and np.sum(uniform >= 130) == 2
    equi = arrivals.trace_counts(np.random.default_rng(2), counts, 0.0, 180.0, spread="equidistant")
    assert np.allclose(np.diff(equi[:3]), 20.0) and np.allclose(equi[4] - equi[3], 30.0)
    assert len(arrivals.trace_counts(rng, counts, 0.0, 180.0, scale=2.0)) == 10
    assert len(arrivals.trace_counts(rng, counts, 0.0, 180.0, scale=0.5)) == 3  # rint: 1.5 -> 2, 1 -> 1
    assert len(arrivals.trace_counts(rng, counts, 0.0, 60.0)) == 3  # only the first minute fits
    assert len(arrivals.trace_counts(rng, np.array([0, 0]), 0.0, 120.0)) == 0


def test_simultaneous_arrivals_keep_the_workload_order_of_instances():
    # Many ties (more than a small-array sort handles by insertion): only a stable sort keeps
    # every instant's invocations in the instances' order.
    bursts = {
        name: {"application": name, "distribution": "Burst", "burst_size": 40, "burst_gap_s": 1.0}
        for name in ("z", "a", "m")
    }
    schedule = build_schedule(
        workload_from_dict(
            {"test_name": "ties", "test_duration_in_seconds": 3, "random_seed": 1, "instances": bursts},
            check_catalogue=False,
        )
    )
    assert len(schedule) == 360
    expected = ([0] * 40 + [1] * 40 + [2] * 40) * 3
    assert schedule.instance_idx.tolist() == expected


def test_counts_name_an_instance_without_arrivals():
    instances = {
        "busy": {"application": "f", "distribution": "Uniform", "rate": 2},
        "idle": {"application": "f", "interarrivals_list": [50.0]},  # after the test's end
    }
    schedule = build_schedule(
        workload_from_dict(
            {"test_name": "c", "test_duration_in_seconds": 2, "random_seed": 1, "instances": instances},
            check_catalogue=False,
        )
    )
    assert schedule.counts() == {"busy": 4, "idle": 0}


def test_a_hand_written_schedule_with_short_fractions_reads_exactly(tmp_path):
    path = tmp_path / "schedule.csv"
    path.write_text("seq,instance,function,intended_s\n0,a,f,1.5\n1,b,g,2\n2,a,f,0.000000001\n", encoding="utf-8")
    intended, names = read_schedule_csv(path)
    assert intended.tolist() == [1_500_000_000, 2_000_000_000, 1] and names == ["a", "b", "a"]


def test_timestamp_trace_accepts_zero_and_indented_comments(tmp_path):
    path = _trace(tmp_path, "0\n  # indented comment\n0.5\n")
    assert arrivals.read_trace(path)[1].tolist() == [0.0, 0.5]


def test_trace_counts_cut_at_a_window_end_inside_a_minute():
    # 121 s covers three minutes (the third for one second): ceil(121 / 60) = 3.
    times = arrivals.trace_counts(np.random.default_rng(4), np.array([0, 0, 60]), 0.0, 121.0, spread="equidistant")
    assert len(times) == 1 and 120.0 <= times[0] < 121.0
    one = arrivals.trace_counts(np.random.default_rng(4), np.array([1]), 0.0, 60.0, spread="equidistant")
    assert one.tolist() == [np.random.default_rng(4).uniform(0.0, 1.0, 1)[0] * 60.0]
