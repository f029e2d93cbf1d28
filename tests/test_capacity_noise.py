"""The host's noise around a capacity search (``faasprof.experiments.capacity_noise``): read from a
fake /proc, carried into the search's interval and its words, and deciding whether a stored
capacity is reused."""

from __future__ import annotations

from pathlib import Path

import pytest

from faasprof.experiments import capacity, capacity_noise, capacity_store
from faasprof.experiments.capacity import Probe, search
from faasprof.workload.spec import workload_from_dict


def _proc(root: Path, cpu: list[int], running: int, tree: dict[int, tuple[int, int]]) -> Path:
    """A /proc with a ``stat`` (the cpu line and procs_running) and ``tree``: pid -> (ppid, ticks)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text(
        "cpu  " + " ".join(map(str, cpu)) + "\ncpu0 0 0 0 0\nprocs_running " + str(running) + "\n"
    )
    for pid, (ppid, ticks) in tree.items():
        (root / str(pid)).mkdir(exist_ok=True)
        # utime stime cutime cstime are fields 14-17; the name holds a space and a parenthesis.
        fields = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0", "0", "0"] + ["0"] * 5
        (root / str(pid) / "stat").write_text(f"{pid} (py (x) y) " + " ".join(fields) + "\n")
    return root


def test_other_work_is_the_cpus_busy_less_our_process_tree(tmp_path):
    # 2 CPUs, 100 ticks each elapsed: 200 ticks in all; 150 busy, of which our tree (10 -> 11 -> 12) took 50.
    before = capacity_noise.snapshot(
        _proc(tmp_path / "a", [0, 0, 0, 0, 0, 0, 0, 0], 1, {10: (1, 0), 11: (10, 0), 12: (11, 0), 99: (1, 0)}), 10
    )
    after = capacity_noise.snapshot(
        _proc(
            tmp_path / "b", [100, 0, 40, 40, 10, 0, 0, 10], 4, {10: (1, 20), 11: (10, 20), 12: (11, 10), 99: (1, 90)}
        ),
        10,
    )
    noise = capacity_noise.between(before, after, cpus=2)
    # busy = 200 - idle 40 - iowait 10 - steal 10 = 140; ours 50; other 90 ticks over 100 per CPU.
    assert noise == capacity_noise.HostNoise(other_cpus=0.9, steal_fraction=0.05, run_queue=3, cpus=2)
    assert capacity_noise.snapshot(tmp_path / "missing") is None
    assert capacity_noise.between(None, after) is None


def _fake_probe(capacity_rps):
    def probe(rate, reference):
        return Probe(rate, "balanced" if rate <= capacity_rps else "over-invoked", duration_ms_p50=13.0)

    return probe


def _noise_reader(other_cpus_by_probe):
    """A ``noise()`` giving snapshots whose differences are the given other work, probe by probe."""
    state = {"busy": 0, "total": 0, "calls": 0}
    values = iter(other_cpus_by_probe)

    def read():
        if state["calls"] % 2 == 1:  # after a probe: 100 ticks per CPU passed, the other work's busy
            state["busy"] += int(round(next(values) * 100))
            state["total"] += 200
        state["calls"] += 1
        return capacity_noise.Snapshot(state["busy"], 0, state["total"], 0, 3, 0.0)

    return read


def test_a_steadily_contended_search_keeps_its_interval_and_says_how_contended():
    result = search(_fake_probe(60), start_rate=10, factor=2, tolerance=0.3, noise=_noise_reader([1.0] * 20))
    assert result["interval_rps"] == result["probes_interval_rps"]
    assert result["contention"].startswith("host contended: other work took 1 of 2 CPUs, run queue 2")
    lines = capacity_store.search_lines("f", result, {"lower_bound": False})
    assert any(line.startswith("host contended: other work took 1 of 2 CPUs") for line in lines)
    assert result["sandbox_busy_ms"] == 13.0
    assert all(p["noise"]["other_cpus"] == 1.0 for p in result["probes"])


def test_noise_that_moved_during_the_search_widens_the_interval():
    # Free CPUs from 1.8 (0.2 other) to 0.8 (1.2 other): ratio 2.25, each end moves by ×1.5.
    others = [0.2, 1.2] + [0.7] * 20
    result = search(_fake_probe(60), start_rate=10, factor=2, tolerance=0.3, noise=_noise_reader(others))
    low, high = result["probes_interval_rps"]
    assert result["interval_rps"] == pytest.approx([low / 1.5, high * 1.5])
    assert result["noise"]["other_cpus_min"] == 0.2 and result["noise"]["other_cpus_max"] == 1.2
    lines = capacity_store.search_lines("f", result, {"lower_bound": False})
    assert f"widened from the probes' {low:.4g}–{high:.4g}/s" in lines[0]
    # Intervals of a quiet search and of this one overlap: the widening spans the capacity that moved.
    quiet = search(_fake_probe(60), start_rate=10, factor=2, tolerance=0.3, noise=_noise_reader([0.2] * 20))
    assert (
        quiet["interval_rps"][0] <= result["interval_rps"][1] and result["interval_rps"][0] <= quiet["interval_rps"][1]
    )


def test_a_stored_capacity_is_reused_only_under_alike_noise(tmp_path, monkeypatch):
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    workload = workload_from_dict(
        {
            "test_name": "t",
            "test_duration_in_seconds": 15,
            "random_seed": 1,
            "blocking_cli": False,
            "instances": {
                "a": {
                    "application": "json_dumps",
                    "distribution": "Uniform",
                    "rate": {"capacity_fraction": 0.5},
                    "activity_window": [0, 15],
                }
            },
        },
        origin="t.json",
    )
    searches = []

    def measure(function, **kwargs):
        searches.append(function)
        return {
            "capacity_rps": 40.0,
            "interval_rps": [36.0, 44.0],
            "bounds_rps": [36.0, 44.0],
            "capacity_text": "40 ± 4/s, 6 probes",
            "noise": {"other_cpus_min": 0.1, "other_cpus_max": 0.3, "cpus": 2},
            "split_rates_rps": {"36": [1, 2]},
            "probes": [],
        }

    said = []
    progress = capacity_store.Progress(said.append)
    quiet = capacity_noise.HostNoise(0.2, 0.0, 1, 2)
    busy = capacity_noise.HostNoise(1.4, 0.0, 3, 2)
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure, progress, noise_now=lambda: quiet)
    assert searches == ["json_dumps"]
    # The search's own lines, as `faasprof capacity` prints them, come with run's search.
    assert any(line.startswith("json_dumps: capacity 40 ± 4/s, 6 probes (interval 36–44/s") for line in said)
    assert any(line.startswith("probes disagreed (36/s kept up 1 of 2)") for line in said)
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure, progress, noise_now=lambda: quiet)
    assert searches == ["json_dumps"]  # alike: reused
    said.clear()
    capacity_store.resolve_workload(workload, None, {}, tmp_path, measure, progress, noise_now=lambda: busy)
    assert searches == ["json_dumps", "json_dumps"]  # not alike: searched again, saying why
    assert any(
        "is not reused: it was measured while other work took 0.1–0.3 of 2 CPUs and takes 1.4 now" in line
        for line in said
    )


def test_a_ctrl_c_in_a_probe_is_told_from_a_probe_that_failed():
    assert capacity._by_a_signal("Ctrl-C (SIGINT) received")
    assert capacity._by_a_signal("interrupted (Ctrl-C or SIGTERM) before the test started")
    assert not capacity._by_a_signal("the embedded localwhisk exited during the run (see x.log)")
    assert not capacity._by_a_signal(None)


def test_a_stored_capacity_is_not_reused_where_the_run_queue_moved_on_a_saturated_host():
    """Ten quick starts reused a capacity searched at a run queue of 1.9 (other work 0.94–1.85 of 2
    CPUs) while 10-18 tasks were runnable, and three balanced phases read over-invoked: the other
    work's share of a saturated host hardly moves, the sandboxes' share falls with the tasks they
    compete with."""
    stored = {"other_cpus_min": 0.94, "other_cpus_max": 1.85, "run_queue_mean": 1.86, "cpus": 2}
    holds, why = capacity_noise.alike(stored, capacity_noise.HostNoise(1.6, 0.0, 12.0, 2))
    assert not holds and why == (
        "it was measured while 1.9 tasks were runnable on average and 12 are now, on 2 CPUs "
        "(more than ×2 apart: the sandboxes' share of the CPUs moved)"
    )
    assert capacity_noise.alike(stored, capacity_noise.HostNoise(1.6, 0.0, 4.0, 2)) == (True, "")  # ×1.75
    # Quieter now than a busy search: the capacity was low; searched again too.
    busy_search = {**stored, "run_queue_mean": 12.0}
    assert not capacity_noise.alike(busy_search, capacity_noise.HostNoise(1.2, 0.0, 3.0, 2))[0]
    # Neither side more runnable tasks than CPUs: no competition for a CPU, the CPU share decides.
    assert capacity_noise.alike({**stored, "run_queue_mean": 0.2}, capacity_noise.HostNoise(1.0, 0.0, 1.5, 2))[0]
    # Entries stored before the run queue was compared (no run_queue_mean) are judged by the CPUs alone.
    assert capacity_noise.alike(
        {"other_cpus_min": 0.9, "other_cpus_max": 1.0, "cpus": 2}, capacity_noise.HostNoise(1.0, 0.0, 20.0, 2)
    )[0]


def test_the_noise_now_averages_the_run_queue_over_its_window():
    # 2 CPUs, 25 ticks each between readings, half of them busy with other work.
    readings = iter(
        [capacity_noise.Snapshot(25 * k, 0, 50 * k, 0, running, 0.0) for k, running in enumerate((1, 3, 21, 5, 11))]
    )
    slept = []
    noise = capacity_noise.measure_now(window_s=1.0, sleep=slept.append, read=lambda: next(readings), samples=4)
    assert slept == [0.25] * 4
    # One reading at the end says 10 runnable besides the reader; the four readings' mean is 9.
    assert noise is not None and noise.other_cpus == 1.0 and noise.run_queue == 9.0
