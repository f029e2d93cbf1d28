"""``faasprof reproduce``'s decisions as pure functions: each verdict rule on synthetic numbers
(a reproduced and a not-reproduced case), ``--figures`` parsing, the hardware a figure needs on a
host without PMU or RDT (a fake /proc and /sys tree), Fig 4's phase plan, and the quotes from the
localwhisk-vs-OpenWhisk document."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from faasprof.commands.reproduce import choose_isolation
from faasprof.errors import ConfigError, NotReadyError
from faasprof.experiments import capacity_store
from faasprof.experiments import reproduce as plan
from faasprof.experiments import reproduce_report as report
from faasprof.experiments import reproduce_rules as rules
from faasprof.experiments import reproduce_runs as runs
from faasprof.experiments.reproduce_slowdown import summarise_rounds
from faasprof.experiments.slowdown_measure import Call
from faasprof.monitoring.host import Root, collect_host


def _phase(fraction, mode, **extra):
    return {
        "fraction": fraction,
        "rate_rps": 10 * fraction,
        "mode": mode,
        "n": 40,
        "p50_ms": 30.0,
        "ci_low": 28.0,
        "ci_high": 33.0,
        **extra,
    }


# -- Figure 4 ----------------------------------------------------------------------------------


def test_modes_in_order_of_rate_reproduce_figure_4():
    verdict = rules.verdict_modes([_phase(2.0, "over-invoked"), _phase(0.2, "under-invoked"), _phase(0.6, "balanced")])
    assert verdict.verdict == rules.REPRODUCED
    assert verdict.value == 3 and verdict.n == 120
    assert [p["fraction"] for p in verdict.details] == [0.2, 0.6, 2.0]
    assert "under-invoked at 2/s (0.2×), balanced at 6/s (0.6×), over-invoked at 20/s (2×)" in verdict.reason
    # A capacity measured too low moves the fractions, not the order of the modes.
    assert (
        rules.verdict_modes(
            [_phase(0.1, "under-invoked"), _phase(1.5, "balanced"), _phase(3.0, "over-invoked")]
        ).verdict
        == rules.REPRODUCED
    )


def test_modes_out_of_order_or_missing_are_not_figure_4_and_say_why():
    phases = [
        _phase(0.2, "under-invoked", pause_grace_ms=50.0, execution_ms_p50=40.0),
        _phase(0.9, "under-invoked", pause_grace_ms=50.0, execution_ms_p50=40.0),
        _phase(2.0, "over-invoked"),
    ]
    verdict = rules.verdict_modes(phases)
    assert verdict.verdict == rules.NOT_REPRODUCED
    assert verdict.reason.startswith(
        "no phase above the lowest rate is balanced: up to 9/s the calls were further apart than "
        "the pause grace (50 ms) plus the execution (40 ms) (observed: "
    )
    verdict = rules.verdict_modes([_phase(0.2, "under-invoked"), _phase(0.9, "over-invoked"), _phase(2.0, "balanced")])
    assert verdict.verdict == rules.NOT_REPRODUCED
    assert "no phase above the balanced 20/s is over-invoked (highest rate 20/s)" in verdict.reason
    verdict = rules.verdict_modes([_phase(0.2, "unknown"), _phase(0.9, "balanced"), _phase(2.0, "over-invoked")])
    assert (
        verdict.verdict == rules.NOT_REPRODUCED
        and "the lowest rate (2/s) is unknown, not under-invoked" in verdict.reason
    )


# -- Figure 5 ----------------------------------------------------------------------------------


def _cold(n, wait, init, run):
    return [{"wait_ms": wait + i, "init_ms": init, "execution_ms": run} for i in range(n)]


def _calls(n, wait, duration):
    return [{"wait_ms": wait + i % 3, "duration_ms": duration} for i in range(n)]


def test_breakdown_markers_reproduce_figure_5():
    verdict = rules.verdict_breakdown(_cold(24, 500.0, 150.0, 2.0), _calls(40, 900.0, 40.0), _calls(40, 1.0, 40.0))
    assert verdict.verdict == rules.REPRODUCED
    assert verdict.value == pytest.approx((511.5 + 150) / 2.0)
    assert verdict.ci_low > 10 and verdict.n == 24
    share = verdict.details[1]
    assert share["value"] > 0.9 and share["ci_low"] > 0.5 and share["n"] == 40
    assert share["not_over_invoked_median"] < 0.1


def test_figure_5_on_fewer_cold_starts_than_it_needs_is_indicative_not_reproduced():
    """reproduce --quick judged Fig 5 on 8 cold starts and called it reproduced."""
    verdict = rules.verdict_breakdown(_cold(12, 500.0, 150.0, 2.0), _calls(40, 900.0, 40.0), _calls(40, 1.0, 40.0))
    assert verdict.verdict == rules.INDICATIVE and verdict.n == 12
    assert f"on 12 cold starts, fewer than the {rules.MIN_COLD_STARTS} a verdict needs: indicative" in verdict.reason


def test_a_cheap_cold_start_or_little_waiting_is_not_figure_5():
    verdict = rules.verdict_breakdown(_cold(12, 10.0, 5.0, 10.0), _calls(40, 900.0, 40.0), [])
    assert verdict.verdict == rules.NOT_REPRODUCED
    assert "does not lie above 10×" in verdict.reason
    verdict = rules.verdict_breakdown(_cold(12, 500.0, 150.0, 2.0), _calls(40, 5.0, 40.0), [])
    assert verdict.verdict == rules.NOT_REPRODUCED and "does not lie above 50%" in verdict.reason
    verdict = rules.verdict_breakdown(_cold(3, 500.0, 150.0, 2.0), [], [])
    assert "3 cold starts are too few for an interval" in verdict.reason
    assert "no over-invoked call with a record" in verdict.reason


# -- Figures 15 and 16 -------------------------------------------------------------------------


def _fn(name, native_ms, factor, low, high):
    return {"function": name, "native_ms": native_ms, "factor": factor, "ci_low": low, "ci_high": high, "n": 20}


def test_short_slower_and_long_near_one_reproduce_figure_15():
    verdict = rules.verdict_short_long(
        [_fn("json_loads", 1.2, 4.0, 3.0, 5.5), _fn("nbody", 230.0, 1.05, 0.9, 1.2), _fn("regex", 30.0, 1.6, 1.4, 1.9)]
    )
    assert verdict.verdict == rules.REPRODUCED
    assert verdict.value == 4.0 and verdict.label == "largest factor (json_loads)"
    assert [d["function"] for d in verdict.details] == ["json_loads", "regex", "nbody"]


def test_a_short_function_within_noise_or_a_long_one_far_from_one_is_not_figure_15():
    verdict = rules.verdict_short_long([_fn("json_loads", 1.2, 1.1, 0.95, 1.3), _fn("nbody", 230.0, 1.0, 0.9, 1.1)])
    assert (
        verdict.verdict == rules.NOT_REPRODUCED
        and "json_loads (1.2 ms)" in verdict.reason
        and "not above 1" in verdict.reason
    )
    verdict = rules.verdict_short_long([_fn("json_loads", 1.2, 4.0, 3.0, 5.0), _fn("nbody", 230.0, 1.6, 1.4, 1.8)])
    assert verdict.verdict == rules.NOT_REPRODUCED and "lies outside ≈1" in verdict.reason
    verdict = rules.verdict_short_long([_fn("json_loads", 1.2, 4.0, 3.0, 5.0)])
    assert "no function of 100 ms or more" in verdict.reason


def test_figure_15_is_never_reproduced_against_a_functions_own_note():
    """reproduce --quick: Fig 15 "reproduced" on json_loads ×2.46 whose note said "not significant"."""
    note = (
        "execution warm ×2.46: not significant (FaaS median 2.341 ms lies within the native calls' range "
        "0.846–3.15 ms: at this length the platform adds less than the run-to-run variation)"
    )
    functions = [
        {**_fn("json_loads", 1.0, 2.46, 2.1, 2.9), "measure": "execution", "notes": note},
        _fn("json_dumps", 1.5, 4.0, 3.0, 5.5),
        _fn("nbody", 230.0, 1.05, 0.9, 1.2),
    ]
    verdict = rules.verdict_short_long(functions)
    assert verdict.verdict == rules.NOT_REPRODUCED
    assert "json_loads (1 ms): ×2.46 but its note says" in verdict.reason and "not significant" in verdict.reason
    # Any reproduced verdict whose details deny it is turned round, whoever made it.
    forged = rules.Verdict(rules.REPRODUCED, "short slower", 2.46, details=functions)
    honest = rules.honest(forged)
    assert honest.verdict == rules.NOT_REPRODUCED and "its notes deny it" in honest.reason
    # A long function's "not significant" is what Fig 15 claims of it: no contradiction.
    long_note = {**_fn("nbody", 230.0, 1.01, 0.9, 1.1), "measure": "execution", "notes": note.replace("2.46", "1.01")}
    assert rules.honest(rules.Verdict(rules.REPRODUCED, "ok", details=[long_note])).verdict == rules.REPRODUCED


def test_faas_faster_than_native_is_stated_as_the_baselines_bias_with_the_cpu_factor():
    functions = [
        _fn("json_loads", 1.2, 4.0, 3.0, 5.5),
        _fn("regex", 30.0, 1.6, 1.4, 1.9),
        {**_fn("nbody", 230.0, 0.832, 0.81, 0.86), "cpu_factor": 1.01},
    ]
    verdict = rules.verdict_short_long(functions)
    assert "nbody ×0.832 (FaaS faster than native) is the native baseline's bias" in verdict.reason
    assert "its CPU-time factor is ×1.01" in verdict.reason


def test_figure_15_on_two_functions_is_indicative():
    verdict = rules.verdict_short_long([_fn("json_loads", 1.2, 4.0, 3.0, 5.5), _fn("nbody", 230.0, 1.05, 0.9, 1.2)])
    assert verdict.verdict == rules.INDICATIVE and "2 functions, fewer than the 3" in verdict.reason


def _rounds(spec: dict[str, tuple[float, list[float]]], seed: int = 1, calls: int = 6) -> list:
    """Fake slowdown rounds: per function its native ms and its factor in each round; each round's
    rows (``slowdown.csv``) and calls (``calls.csv``), the calls spread ±3 % around the round's."""
    rng = np.random.default_rng(seed)
    rounds = []
    for k in range(len(next(iter(spec.values()))[1])):
        rows, round_calls = [], []
        for name, (native_ms, factors) in spec.items():
            rows.append({"function": name, "slowdown_exec_warm": factors[k], "slowdown_cpu_warm": 1.0, "notes": ""})
            for seq in range(calls):
                for phase, ms in (("native", native_ms), ("warm", native_ms * factors[k])):
                    exec_ms = float(ms * rng.uniform(0.97, 1.03))
                    round_calls.append(Call(name, phase, seq, "success", "warm" if phase == "warm" else "", exec_ms))
        rounds.append((rows, round_calls))
    return rounds


def _power_law(exponent: float, natives=(1.0, 10.0, 100.0), rounds: int = 4) -> dict:
    spread = (1.0, 1.04, 0.97, 1.02, 0.99)[:rounds]
    return {f"f{n:g}": (n, [3.0 * n**exponent * s for s in spread]) for n in natives}


def test_a_falling_power_law_reproduces_figure_16():
    summary = summarise_rounds(_rounds(_power_law(-0.3, (1.0, 3.0, 10.0, 30.0, 100.0))))
    exponent, low, high = summary["exponent"]
    assert exponent == pytest.approx(-0.3, abs=0.03) and low < exponent < high < 0
    points = [f for f in summary["functions"] if f["function"] in summary["fitted"]]
    verdict = rules.verdict_exponent(exponent, low, high, points)
    assert verdict.verdict == rules.REPRODUCED and verdict.n == 5 and verdict.details == points


def test_a_power_law_through_fewer_than_five_functions_is_indicative():
    """reproduce --quick fitted a power law with a bootstrap interval through 3 functions and called it reproduced."""
    summary = summarise_rounds(_rounds(_power_law(-0.3)))
    exponent, low, high = summary["exponent"]
    assert high < 0
    verdict = rules.verdict_exponent(exponent, low, high, summary["functions"])
    assert verdict.verdict == rules.INDICATIVE and verdict.n == 3
    assert "fewer than 5 functions is indicative, not reproduced" in verdict.reason


def test_a_flat_power_law_or_one_function_is_not_figure_16():
    rounds = {
        "f1": (1.0, [3.0, 2.7, 3.3, 3.0]),
        "f10": (10.0, [3.0, 3.3, 2.8, 3.1]),
        "f100": (100.0, [3.0, 2.8, 3.2, 2.9]),
    }
    exponent, low, high = summarise_rounds(_rounds(rounds))["exponent"]
    assert low < 0 < high
    points = [_fn(f"f{n:g}", n, 3.0, None, None) for n in (1.0, 10.0, 100.0)]
    assert rules.verdict_exponent(exponent, low, high, points).verdict == rules.NOT_REPRODUCED
    assert (
        rules.verdict_exponent(math.nan, math.nan, math.nan, points[:1]).reason
        == "no fit: 1 function(s) with a factor (2 needed)"
    )


def _fig15_and_16(rounds: list) -> dict[str, rules.Verdict]:
    summary = summarise_rounds(rounds)
    results = {"slowdown": {"primary": "process", "by_isolation": {"process": {**summary, "baseline": "the baseline"}}}}
    figures = {f.key: f for f in plan.FIGURES}
    return {key: plan.judge(figures[key], results) for key in ("15", "16")}


def _claims_slowdown(note: str) -> bool:
    """Whether a function's run-level note says it is slower beyond noise."""
    return note.endswith(": slower")


def test_figure_15_over_rounds_never_stands_against_its_notes():
    """reproduce --quick called Fig 15 reproduced on json_loads ×2.46 whose note said "not
    significant". Now each round (a new native worker and platform) is one sample: rounds that
    agree give "slower" in the note and a reproduced verdict; rounds that disagree (×2.46 in one,
    ×0.9 in another) give "no significant difference" in the note and no reproduced verdict. In
    every case each short function's note agrees with the verdict."""
    agree = {
        "json_loads": (1.0, [2.4, 2.5, 2.3]),
        "json_dumps": (1.5, [4.0, 4.2, 3.9]),
        "nbody": (230.0, [1.0, 1.03, 0.98]),
    }
    disagree = {**agree, "json_loads": (1.0, [2.46, 0.9, 1.6])}
    one_round = {name: (native, factors[:1]) for name, (native, factors) in agree.items()}
    outcomes = {}
    for label, spec in (("agree", agree), ("disagree", disagree), ("one round", one_round)):
        verdicts = _fig15_and_16(_rounds(spec))
        fig15 = verdicts["15"]
        short = [d for d in fig15.details if d["native_ms"] < rules.SHORT_NATIVE_MS]
        if fig15.verdict == rules.REPRODUCED:
            assert all(_claims_slowdown(d["notes"]) and d["significant"] for d in short), (label, short)
        else:
            assert any(not _claims_slowdown(d["notes"]) for d in short), (label, fig15.reason)
        for verdict in verdicts.values():
            assert not (verdict.verdict == rules.REPRODUCED and any(rules.contradiction(d) for d in short))
        assert "the baseline" in fig15.reason
        outcomes[label] = fig15
    assert outcomes["agree"].verdict == rules.REPRODUCED
    loads = next(d for d in outcomes["agree"].details if d["function"] == "json_loads")
    assert (
        loads["rounds"] == 3
        and loads["ci_low"] > 1.05
        and loads["notes"].startswith("execution warm ×2.38 (interval ×2.1")
    )
    assert (
        outcomes["disagree"].verdict == rules.NOT_REPRODUCED
        and "json_loads (1.01 ms): ×1.51" in outcomes["disagree"].reason
    )
    loads = next(d for d in outcomes["disagree"].details if d["function"] == "json_loads")
    assert loads["notes"].endswith("no significant difference") and not loads["significant"]
    assert outcomes["one round"].verdict == rules.NOT_REPRODUCED
    assert all(d["notes"].endswith("no verdict") and d["ci_low"] is None for d in outcomes["one round"].details)


# -- hardware figures --------------------------------------------------------------------------


def test_a_ratio_beyond_noise_reproduces_and_one_within_noise_does_not():
    verdict = rules.verdict_ratio("branch MPKI", [20.0, 21.0, 19.5, 20.5, 22.0], [1.0, 1.1, 0.9, 1.05, 0.95])
    assert verdict.verdict == rules.REPRODUCED and verdict.value == pytest.approx(20.5 / 1.0) and verdict.n == 10
    verdict = rules.verdict_ratio(
        "IPC inside over outside", [0.6, 0.62, 0.65, 0.61], [1.0, 0.98, 1.02, 1.01], above=False
    )
    assert verdict.verdict == rules.REPRODUCED and verdict.ci_high < 1
    verdict = rules.verdict_ratio("IPC inside over outside", [1.0, 0.9, 1.1, 1.0], [1.0, 0.95, 1.05, 1.0], above=False)
    assert verdict.verdict == rules.NOT_REPRODUCED and "not below 1 beyond noise" in verdict.reason
    assert rules.verdict_ratio("x", [], [1.0]).reason == "x: no samples on one side"


def test_ratio_intervals_are_seeded():
    a, b = [3.0, 4.0, 5.0, 4.5, 3.5], [1.0, 1.2, 0.9, 1.1]
    assert rules.ratio_ci(a, b) == rules.ratio_ci(a, b)
    assert rules.ratio_ci(a, b)[0] == pytest.approx(4.0 / 1.05)


# -- the figure table --------------------------------------------------------------------------


def test_figures_parse_numbers_and_ranges():
    figures, not_judged = plan.parse_figures("4,5,9-16")
    assert [f.key for f in figures] == ["4", "5", "10-11", "14", "15", "16"]
    assert not_judged == [9, 12, 13]
    figures, not_judged = plan.parse_figures(None)
    assert [f.key for f in figures] == ["4", "5", "6-7", "10-11", "14", "15", "16"] and not_judged == [9, 12, 13]
    assert [f.key for f in plan.parse_figures("7")[0]] == ["6-7"]
    with pytest.raises(ConfigError, match=r"--figures: 8: not a figure reproduce knows; choose from 4, 5, 6, 7, 9"):
        plan.parse_figures("4,8")
    with pytest.raises(ConfigError, match="'4-x' is not a figure number"):
        plan.parse_figures("4-x")


def _host_without_counters(tmp_path):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/cpuinfo").write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2\n\n"
    )
    (tmp_path / "proc/sys/kernel/perf_event_paranoid").write_text("2\n")
    (tmp_path / "proc/filesystems").write_text("nodev\tcgroup2\n")
    (tmp_path / "proc/mounts").write_text("")
    (tmp_path / "sys/bus/event_source/devices/software").mkdir(parents=True)
    (tmp_path / "sys/devices/system/cpu").mkdir(parents=True)
    (tmp_path / "sys/devices/system/cpu/online").write_text("0-1\n")
    return collect_host(tmp_path)


def test_hardware_figures_are_not_measurable_without_pmu_or_rdt(tmp_path):
    host = _host_without_counters(tmp_path)
    gaps = plan.requirement_gaps(Root(tmp_path), host, live=False)
    assert set(gaps) == {"pmu", "rdt"}
    assert "no hardware PMU" in gaps["pmu"]
    assert "no RDT monitoring flags" in gaps["rdt"]
    figures = {f.key: f for f in plan.FIGURES}
    for key, need in (("6-7", "hardware PMU"), ("14", "hardware PMU"), ("10-11", "Intel RDT")):
        reason = plan.unmet(figures[key], gaps)
        assert (
            reason.startswith(f"needs a {need}" if need != "Intel RDT" else "needs Intel RDT")
            and "this host:" in reason
        )
        entry = report.figure_entry(
            figures[key], rules.not_measurable(reason), {}, "localwhisk, docker isolation", tmp_path, {1: "quote"}
        )
        assert entry["verdict"] == rules.NOT_MEASURABLE and entry["reason"] == reason
        assert (
            entry["value"] is None
            and entry["platform"] is None
            and entry["run_dirs"] == []
            and entry["localwhisk_vs_openwhisk"] == []
        )
    for key in ("4", "5", "15", "16"):
        assert plan.unmet(figures[key], gaps) is None


def test_a_failed_experiment_gives_its_figures_no_number():
    figure = next(f for f in plan.FIGURES if f.key == "5")
    verdict = plan.judge(figure, {"cold": {"error": "ConfigError: boom"}, "modes": {}})
    assert verdict.verdict == rules.NOT_REPRODUCED and verdict.value is None
    assert verdict.reason == "no result: the experiment failed (cold: ConfigError: boom)"


def test_phase_plan_caps_the_lowest_rate_and_raises_the_grace_on_a_slow_host():
    assert plan.pause_grace_for(100.0) == 50.0
    assert plan.pause_grace_for(11.4) == 200.0  # 2 gaps of 88 ms, rounded up to 25 ms
    phases = plan.phase_plan(plan.PROFILES["quick"], 100.0, 50.0)
    assert [p["asked_fraction"] for p in phases] == [0.2, 0.6, 0.9, 2.0]
    assert phases[0]["capped"] and phases[0]["rate_rps"] == 10.0 and phases[0]["fraction"] == 0.1  # 2 graces apart
    assert [p["length_s"] for p in phases] == [10.0] * 4
    slow = plan.phase_plan(plan.PROFILES["quick"], 20.0, 200.0)
    assert slow[0]["capped"] and slow[0]["rate_rps"] == 2.5 and slow[0]["length_s"] == math.ceil(30 / 2.5 / 0.8) + 2
    assert not plan.phase_plan(plan.PROFILES["quick"], 10.0, 200.0)[0]["capped"]


def test_without_an_over_invoked_phase_the_highest_rate_is_doubled():
    rows = [_phase(0.2, "under-invoked"), _phase(2.0, "balanced"), _phase(0.9, "balanced")]
    higher, warmup = plan.higher_phase(rows, 10.0, 175.0)
    assert higher == {
        "fraction": 4.0,
        "asked_fraction": None,
        "rate_rps": 40.0,
        "length_s": 10.0,
        "capped": False,
        "pause_grace_ms": 175.0,
    }
    assert warmup == {"fraction": 2.0, "rate_rps": 20.0, "length_s": plan.WARMUP_S}
    assert plan.higher_phase(rows + [_phase(4.0, "over-invoked")], 10.0, 175.0) is None


def test_isolation_is_docker_when_it_works_else_process_with_the_reason():
    assert choose_isolation(None, None, None)[0] == "docker"
    isolation, why = choose_isolation(None, None, "no Docker daemon socket at /x")
    assert isolation == "process" and "Docker is unavailable (no Docker daemon socket at /x)" in why
    assert choose_isolation("process", None, None) == ("process", "--isolation process")
    with pytest.raises(NotReadyError, match="--isolation docker: no Docker"):
        choose_isolation("docker", None, "no Docker daemon socket at /x")


def test_the_comparison_document_is_quoted_by_item():
    items = report.comparison_items()
    assert items[1].startswith("Capacity (changes conclusions).")
    assert items[3].startswith("Cold and resumed starts") and items[7].startswith("Figure 4 modes.")
    for figure in plan.FIGURES:
        assert set(figure.comparison_items) <= set(items)


def test_a_capacity_not_stored_is_measured_with_the_reproduce_search(tmp_path, monkeypatch):
    # A fresh machine has no stored capacity: reproduce measures it through the store, with its
    # own longer probes over what the store passes (it crashed looking for a removed setting).
    monkeypatch.setenv(capacity_store.STORE_ENV, str(tmp_path / "store.json"))
    calls = []

    def fake_find_capacity(function, **options):
        calls.append((function, options))
        return {"capacity_rps": 24.0, "capacity_is_lower_bound": False, "reference": None}

    monkeypatch.setattr(runs, "find_capacity", fake_find_capacity)
    ctx = runs.Context(
        out=tmp_path / "reproduce", connection=None, isolation="process", profile=plan.PROFILES["quick"], monitoring={}
    )
    measured = runs.capacity(ctx)
    assert measured["capacity_rps"] == 24.0
    ((function, options),) = calls
    assert function == plan.MODES_FUNCTION and options["out_dir"] == ctx.runs
    assert {key: options[key] for key in plan.CAPACITY_SEARCH} == plan.CAPACITY_SEARCH
    assert runs.capacity(ctx)["capacity_rps"] == 24.0 and len(calls) == 1  # stored: read, not measured again


def test_fig14_compares_ipc_inside_the_aggressor_window_with_the_victim_alone_before_it():
    """The victim alone at IPC 2.0 for [0, 10) s, 1.5 with the aggressor in [10, 14), still
    recovering at 1.4 to its end at 29 s, the host idle at 3.0 after: IPC fell by a quarter. Pooled
    with everything outside the window, the reference was 1.4 and the fall vanished (×1.07)."""
    t_s = np.round(np.arange(0.1, 33.0, 0.1), 3)
    ipc = np.select([t_s <= 10.0, t_s <= 14.0, t_s <= 29.0], [2.0, 1.5, 1.4], 3.0)
    ipc = ipc + np.resize([-0.02, 0.0, 0.02], len(t_s))  # a little noise for the interval
    perf = pd.DataFrame({"t_s": t_s, "ipc": ipc})
    found = runs.ipc_by_window(perf, (10.0, 14.0), (0.0, 29.0))
    assert found["ipc_windows_s"] == {"inside": [10.0, 14.0], "before": [0.0, 10.0]}
    assert len(found["ipc_inside"]) == 40 and max(found["ipc_inside"]) <= 1.52  # wholly inside only
    assert len(found["ipc_reference"]) == 100 and min(found["ipc_reference"]) >= 1.98
    figure = next(f for f in plan.FIGURES if f.key == "14")
    # One run: its seconds share one host moment; beyond noise within it, but indicative only.
    verdict = plan.judge(figure, {"interference": {**found, "runs": [found]}})
    assert verdict.verdict == rules.INDICATIVE, verdict.reason
    assert verdict.value == pytest.approx(0.75, abs=0.02)
    assert "inside the aggressor's window [10, 14) s over the victim's alone before it [0, 10) s" in verdict.reason
    assert "within one run" in verdict.reason
    # An aggressor from the victim's first second: the reference is the victim alone after it.
    late = runs.ipc_by_window(perf, (0.0, 10.0), (0.0, 29.0))
    assert late["ipc_windows_s"] == {"inside": [0.0, 10.0], "after": [10.0, 29.0]}
    assert runs.ipc_by_window(None, (10.0, 14.0), (0.0, 29.0))["ipc_inside"] == []


def _ipc_run(inside: float, alone: float, seed: int) -> dict:
    """One Fig 14 run's per-second IPC samples: ``alone`` before the aggressor, ``inside`` with it."""
    rng = np.random.default_rng(seed)
    return {
        "ipc_inside": list(inside + rng.normal(0, 0.02, 40)),
        "ipc_reference": list(alone + rng.normal(0, 0.02, 100)),
        "ipc_windows_s": {"inside": [10.0, 14.0], "before": [0.0, 10.0]},
    }


def test_fig14_is_judged_over_runs_each_run_one_sample():
    """Issue 43: the run is the sample. Three runs whose IPC fell by a quarter each: reproduced,
    over 3 runs. Two runs: indicative. Runs that disagree (one fell, one rose, one flat): not
    reproduced, however sure each run's own seconds are."""
    figure = next(f for f in plan.FIGURES if f.key == "14")
    fell = [_ipc_run(1.5 - 0.01 * k, 2.0, k) for k in range(3)]
    verdict = plan.judge(figure, {"interference": {"runs": fell, "ipc_windows_s": fell[0]["ipc_windows_s"]}})
    assert verdict.verdict == rules.REPRODUCED, verdict.reason
    assert verdict.n == 3 and verdict.value == pytest.approx(0.74, abs=0.02) and verdict.ci_high < 1
    assert "over 3 runs, each run's median one sample" in verdict.reason
    two = plan.judge(figure, {"interference": {"runs": fell[:2]}})
    assert two.verdict == rules.INDICATIVE and "fewer than 3 runs" in two.reason
    mixed = [_ipc_run(1.5, 2.0, 1), _ipc_run(2.4, 2.0, 2), _ipc_run(2.0, 2.0, 3)]
    assert all(plan.judge(figure, {"interference": {"runs": [run]}}).verdict != rules.NOT_MEASURABLE for run in mixed)
    disagreeing = plan.judge(figure, {"interference": {"runs": mixed}})
    assert disagreeing.verdict == rules.NOT_REPRODUCED and "not below 1 beyond noise" in disagreeing.reason


def test_the_hardware_ratios_of_one_run_are_indicative_at_most():
    """Figs 6-7 and 10-11 compare per-second samples of one run (or one run per function): beyond
    noise within it, they describe that run only."""
    mpki = next(f for f in plan.FIGURES if f.key == "6-7")
    verdict = plan.judge(mpki, {"mpki": {"short_mpki": [20.0, 21.0, 19.5, 20.5], "long_mpki": [1.0, 1.1, 0.9, 1.05]}})
    assert verdict.verdict == rules.INDICATIVE and verdict.value == pytest.approx(20.0, rel=0.05)
    bandwidth = next(f for f in plan.FIGURES if f.key == "10-11")
    same = plan.judge(bandwidth, {"modes": {"bandwidth_high": [5.0, 5.1, 4.9], "bandwidth_low": [5.0, 5.05, 4.95]}})
    assert same.verdict == rules.NOT_REPRODUCED
