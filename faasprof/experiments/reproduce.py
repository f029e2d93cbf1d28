"""``faasprof reproduce``: the MICRO'19 paper's figures regenerated on this host, each set beside
the paper's finding with a verdict (the command is ``faasprof.commands.reproduce``).

This module holds what the command decides before and after measuring, as pure functions: the
figure table (``FIGURES``: per figure what it needs from the host, which experiment makes it, the
paper's finding and the verdict rule), ``--figures`` parsing, what the host lacks
(``requirement_gaps``, from the collectors' own doctor checks), the profiles (``--quick``, full),
the expected wall time, and the verdict per figure from the experiments' results
(``judge``). The experiments themselves run in ``faasprof.experiments.reproduce_runs``; the rules are in
``faasprof.experiments.reproduce_rules``; the page and ``reproduce.json`` in ``faasprof.experiments.reproduce_report``.

The paper's findings are those of its abstract (Shahrad, Balkind, Wentzlaff, MICRO 2019): up to
20× slowdown from containerisation, cold start over 10× a short function's execution, branch
MPKI 20× higher for short functions, memory bandwidth up 6× from the invocation pattern, IPC down
as much as 35 % from interference; plus its Figure 4 (three latency modes) and Figure 5 (the
latency breakdown). Figures whose finding the abstract gives no number for (9, 12, 13) are not
judged: ``NOT_JUDGED`` names the command that draws each.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from faasprof.errors import ConfigError
from faasprof.experiments import reproduce_rules as rules
from faasprof.monitoring.collectors.base import NO
from faasprof.monitoring.collectors.perf import PerfCollector
from faasprof.monitoring.collectors.rdt import RdtCollector
from faasprof.monitoring.host import Root

REPRODUCE_FORMAT_VERSION = 1
RESULT_JSON = "reproduce.json"
REPORT_HTML = "report.html"

# What a figure may need from the host, and what provides it.
WARMUP_S = 5.0  # before a phase at a doubled rate (Fig 4), its run warms the sandboxes at the rate below it

HARDWARE = {
    "pmu": "a hardware PMU counting instructions, cycles and branch-misses (bare metal, or a VM with the PMU passed through) "
    "and perf_event_paranoid <= 0 or root",
    "rdt": "Intel RDT memory-bandwidth monitoring (a Xeon with CMT/MBM, resctrl mounted or pqos run as root)",
}
PMU_EVENTS = ("instructions", "cycles", "branch-misses")


@dataclass(frozen=True)
class Figure:
    key: str  # how the report names it: "4", "6-7"
    numbers: tuple[int, ...]
    title: str
    finding: str  # the paper's finding, in words
    paper_value: str  # the paper's number
    rule: str  # the verdict rule, in words
    experiments: tuple[str, ...]  # the experiments (reproduce_runs) whose results it reads
    needs: tuple[str, ...] = ()
    comparison_items: tuple[
        int, ...
    ] = ()  # items of faasprof/localwhisk/localwhisk-vs-openwhisk.md about what it measures
    plots: tuple[str, ...] = ()  # the experiments' plots it shows (file names; all of them when empty)


FIGURES: tuple[Figure, ...] = (
    Figure(
        "4",
        (4,),
        "Latency modes",
        "a function's latency has three modes by invocation rate: under-invoked (sandboxes paused between calls), "
        "balanced (latency near the execution time) and over-invoked (a backlog: latency grows)",
        "3 modes",
        "reproduced when the lowest rate is under-invoked, a higher one balanced and a higher one still over-invoked (the "
        "analyzer's mode rule, faasprof/analyzer/stats.py); where no rate of the ladder is over-invoked, the highest is doubled (twice at "
        "most); the pause grace is the paper's 50 ms, raised where this host's capacity is so low that no rate "
        "it sustains keeps a sandbox warm (pause_grace_ms in the table)",
        ("modes",),
        (),
        (1, 7),
        ("latency_over_time.png",),
    ),
    Figure(
        "5",
        (5,),
        "Latency breakdown",
        "a cold start can be over 10× a short function's execution time; over-invoked, a call's latency is mostly waiting",
        "> 10×",
        f"reproduced when the median of (waitTime + initTime) / execution over cold calls of a short function lies above "
        f"{rules.COLD_START_FACTOR:g}× and the median share of waitTime in over-invoked calls above {rules.WAIT_SHARE:.0%}, "
        "both beyond noise (95 % intervals)",
        ("cold", "modes"),
        (),
        (3,),
        ("breakdown.png",),
    ),
    Figure(
        "6-7",
        (6, 7),
        "Branch MPKI against execution time",
        "branch mispredictions per kilo-instruction are 20× higher for short functions",
        "20×",
        "reproduced when the shortest function's branch MPKI over the longest's lies above 1 beyond noise "
        "(bootstrap interval of the ratio of per-second medians)",
        ("mpki",),
        ("pmu",),
    ),
    Figure(
        "10-11",
        (10, 11),
        "Memory bandwidth and the invocation pattern",
        "memory bandwidth increases by 6× due to the invocation pattern",
        "6×",
        "reproduced when the busiest latency-mode phase's median memory bandwidth over the quietest's lies above 1 beyond noise",
        ("modes",),
        ("rdt",),
    ),
    Figure(
        "14",
        (14,),
        "Interference",
        "IPC decreases by as much as 35 % due to inter-function interference",
        "−35 %",
        f"reproduced when the IPC while the aggressor runs over the victim's alone lies below 1 beyond noise over "
        f"{rules.MIN_RATIO_RUNS} runs or more (each run's median on each side one sample; 95 % Welch interval, at least "
        "5 %); one run is indicative",
        ("interference",),
        ("pmu",),
        (1,),
    ),
    Figure(
        "15",
        (15,),
        "Containerisation slowdown per function",
        "FaaS containerisation brings up to 20× slowdown compared to native execution, for short functions",
        "up to 20×",
        f"reproduced when every function under {rules.SHORT_NATIVE_MS:g} ms native time is slower in FaaS over "
        f"repeated rounds (each round's median one sample; 95 % Welch interval above 1 and at least 5 %) and every one "
        f"of {rules.LONG_NATIVE_MS:g} ms or more is ≈ 1 within noise (interval reaching into "
        f"{rules.NOISE_BAND[0]:g}–{rules.NOISE_BAND[1]:g}); execution time of warm calls",
        ("slowdown",),
        (),
        (3,),
        ("fig15_slowdown_per_function.png",),
    ),
    Figure(
        "16",
        (16,),
        "Slowdown against native execution time",
        "the slowdown falls as native execution time grows (a power law with a negative exponent)",
        "negative exponent",
        "reproduced when the exponent's interval over rounds (each round's fit one sample) lies below 0, "
        "through 5 functions or more",
        ("slowdown",),
        (),
        (3,),
        ("fig16_slowdown_vs_native.png",),
    ),
)
NOT_JUDGED: dict[int, tuple[str, str]] = {
    9: (
        "cold-start and execution time against the LLC ways given (CAT)",
        "faasprof sweep faasprof/workload_configs/sweep_llc_coldstart.json",
    ),
    12: (
        "capacity against the memory limit",
        "faasprof sweep faasprof/workload_configs/sweep_json_dumps_memory_capacity.json",
    ),
    13: (
        "markdown's latency against memory and load",
        "faasprof sweep faasprof/workload_configs/sweep_markdown_memory.json",
    ),
}
NOT_JUDGED_WHY = (
    "the paper's abstract gives no number for it, so reproduce draws no verdict: run the sweep and read its report"
)


def known_numbers() -> list[int]:
    return sorted({n for f in FIGURES for n in f.numbers} | set(NOT_JUDGED))


def parse_figures(text: str | None) -> tuple[list[Figure], list[int]]:
    """``--figures 4,5,9-16`` → the figures to judge (table order) and the not-judged numbers asked for."""
    if not text:
        return list(FIGURES), sorted(NOT_JUDGED)
    wanted: set[int] = set()
    named: set[int] = set()  # given alone (not in a range): an unknown one is a mistake
    for part in (p.strip() for p in text.split(",")):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match or (match.group(2) and int(match.group(2)) < int(match.group(1))):
            raise ConfigError(
                f"--figures: {part!r} is not a figure number or a range such as 9-16; e.g. --figures 4,5,15-16"
            )
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        wanted |= set(range(first, last + 1))
        if match.group(2) is None:
            named.add(first)
    known = set(known_numbers())
    unknown = sorted((named - known) or (wanted if not wanted & known else set()))
    if unknown:
        raise ConfigError(
            f"--figures: {', '.join(map(str, unknown))}: not a figure reproduce knows; choose from {', '.join(map(str, sorted(known)))}"
        )
    return [f for f in FIGURES if set(f.numbers) & wanted], sorted(n for n in NOT_JUDGED if n in wanted)


def requirement_gaps(root: Root, host: dict, live: bool = True) -> dict[str, str]:
    """What this host lacks, by ``HARDWARE`` key: the collectors' doctor findings that say MISSING
    (``faasprof doctor`` prints the same), joined into one reason each."""
    gaps: dict[str, str] = {}
    checks = (
        ("pmu", PerfCollector.doctor(root, host, live, {"events": list(PMU_EVENTS)})),
        ("rdt", RdtCollector.doctor(root, host, live, None)),
    )
    for key, findings in checks:
        missing = [f.text + (f" ({f.fix})" if f.fix else "") for f in findings if f.state == NO]
        if missing:
            gaps[key] = "; ".join(dict.fromkeys(missing))
    return gaps


def unmet(figure: Figure, gaps: dict[str, str]) -> str | None:
    """Why ``figure`` is not measurable here and what it needs, or None."""
    lacking = [key for key in figure.needs if key in gaps]
    if not lacking:
        return None
    return "; ".join(f"needs {HARDWARE[key]}; this host: {gaps[key]}" for key in lacking)


@dataclass(frozen=True)
class Profile:
    name: str
    fractions: tuple[float, ...]  # Fig 4's rates, as fractions of the capacity
    phase_s: float  # the shortest phase of Fig 4's run
    min_phase_calls: int  # each phase at least this many calls (lower rates get longer phases)
    cold_calls: int
    slowdown_functions: tuple[str, ...]
    slowdown_repeat: int
    mpki_functions: tuple[str, ...]
    mpki_s: float
    escalations: int = 2  # Fig 4: at most this many runs at a doubled rate while no phase is over-invoked
    # Figs 15/16: slowdown passes, each a new native worker and platform, each round's median one sample
    # (reproduce_slowdown); two at least, for an interval over rounds.
    slowdown_rounds: int = 3
    # Fig 14: runs of the interference workload, each run's median IPC on each side one sample
    # (reproduce_rules.verdict_ratio_over_runs); MIN_RATIO_RUNS at least for a verdict.
    interference_runs: int = 3


PROFILES = {
    "full": Profile(
        "full",
        (0.1, 0.4, 0.7, 0.9, 1.5, 2.0),
        20.0,
        40,
        16,
        ("json_loads", "regex", "json_dumps", "deltablue", "pidigits", "nbody", "float"),
        6,
        ("json_loads", "json_dumps", "nbody"),
        20.0,
        slowdown_rounds=4,
    ),
    "quick": Profile(
        "quick",
        (0.2, 0.6, 0.9, 2.0),
        10.0,
        30,
        8,
        ("json_loads", "json_dumps", "nbody"),
        4,
        ("json_loads", "nbody"),
        10.0,
        slowdown_rounds=3,
    ),
    # Tests only (hidden --tiny): every experiment runs, too short for a verdict to mean anything.
    "tiny": Profile(
        "tiny",
        (0.3, 2.0),
        3.0,
        10,
        3,
        ("json_loads", "nbody"),
        2,
        ("json_loads", "nbody"),
        4.0,
        1,
        slowdown_rounds=2,
        interference_runs=1,
    ),
}
MODES_FUNCTION = "json_dumps"  # the paper's Figure 4 and 5 function
COLD_FUNCTION = "json_loads"  # a short function (about a millisecond) for the cold-start marker
COLD_GAP_S = 2.5  # between cold calls, past COLD_IDLE_TIMEOUT_S so that each finds no sandbox
COLD_IDLE_TIMEOUT_S = 1
PAUSE_GRACE_MS = 50.0  # the paper's OpenWhisk (and localwhisk's default)
UNDER_GAP_GRACES = 2  # an under-invoked rate leaves at least this many pause graces between calls
BALANCED_GAPS = 2.0  # Fig 4's pause grace spans at least this many mean gaps between calls at the capacity
RUN_OVERHEAD_S = 25.0  # start, pre-flight, waiting for records, analysis: per run, measured on 2 cores
# The capacity search when none is stored: 8 s probes (capacity_store's quick search probes for 3 s,
# which on Docker sandboxes is mostly the cold starts of a fresh platform: measured on 2 cores, it
# gave 7.5/s where the warm platform held 15/s balanced).
CAPACITY_SEARCH = {
    "duration_s": 8.0,
    "start_rate": 3.0,
    "factor": 2.0,
    "tolerance": 0.25,
    "max_runs": 7,
    "cooldown_s": 1.0,
    "budget_s": None,  # its figures rest on this capacity: the bracket's ends are always confirmed
}
CAPACITY_SEARCH_S = 140.0  # CAPACITY_SEARCH on 2 cores with Docker sandboxes
SLOWDOWN_CALL_S = 1.5  # per repeat and function: a native, a keep-warm, a warm and a resumed call (+ the pause wait)


def pause_grace_for(capacity_rps: float) -> float:
    """The pause grace of Fig 4's run: the paper's 50 ms, raised on a host whose capacity is so low
    that calls at half of it are further apart than 50 ms (no rate it sustains would keep a sandbox
    warm, so no balanced band would exist): at least ``BALANCED_GAPS`` mean gaps at the capacity."""
    needed = BALANCED_GAPS * 1000.0 / capacity_rps
    return float(max(PAUSE_GRACE_MS, math.ceil(needed / 25.0) * 25.0))


def phase_plan(profile: Profile, capacity_rps: float, pause_grace_ms: float = PAUSE_GRACE_MS) -> list[dict]:
    """Fig 4's phases: fraction, rate and length. The lowest rate is capped so that calls are at
    least ``UNDER_GAP_GRACES`` pause graces apart (else it cannot be under-invoked whatever the
    capacity); each phase lasts long enough for ``min_phase_calls`` calls after the analyzer's warm-up."""
    plan = []
    for index, fraction in enumerate(sorted(profile.fractions)):
        rate = fraction * capacity_rps
        capped = index == 0 and rate > 1000.0 / (UNDER_GAP_GRACES * pause_grace_ms)
        if capped:
            rate = 1000.0 / (UNDER_GAP_GRACES * pause_grace_ms)
        length = max(profile.phase_s, math.ceil(profile.min_phase_calls / rate / 0.8) + 2.0)
        plan.append(
            {
                "fraction": round(rate / capacity_rps, 4),
                "asked_fraction": fraction,
                "rate_rps": round(rate, 4),
                "length_s": float(length),
                "capped": capped,
                "pause_grace_ms": pause_grace_ms,
            }
        )
    return plan


def higher_phase(rows: list[dict], phase_s: float, pause_grace_ms: float) -> tuple[dict, dict] | None:
    """Fig 4 with no over-invoked phase yet: (a phase at twice the highest rate, the warm-up at that
    rate before it); None when a phase was over-invoked."""
    if not rows or any(r["mode"] == "over-invoked" for r in rows):
        return None
    top = max(rows, key=lambda r: r["rate_rps"])
    higher = {
        "fraction": round(2 * top["fraction"], 4),
        "asked_fraction": None,
        "rate_rps": round(2 * top["rate_rps"], 4),
        "length_s": phase_s,
        "capped": False,
        "pause_grace_ms": pause_grace_ms,
    }
    return higher, {"fraction": top["fraction"], "rate_rps": top["rate_rps"], "length_s": WARMUP_S}


def expected_seconds(
    figures: list[Figure],
    profile: Profile,
    capacity_known: bool,
    capacity_guess_rps: float = 10.0,
    beside_process: bool = True,
) -> dict[str, float]:
    """Seconds each experiment is expected to take on a 2-core host (the ETA starts from these)."""
    wanted = {e for f in figures for e in f.experiments}
    out: dict[str, float] = {}
    if wanted & {"modes", "interference"}:
        out["capacity"] = 0.0 if capacity_known else CAPACITY_SEARCH_S
    if "modes" in wanted:
        plan = phase_plan(profile, capacity_guess_rps, pause_grace_for(capacity_guess_rps))
        backlog = sum(p["length_s"] * max(p["fraction"] - 1.0, 0.0) for p in plan)
        out["modes"] = sum(p["length_s"] for p in plan) + backlog + RUN_OVERHEAD_S
    if "cold" in wanted:
        out["cold"] = profile.cold_calls * COLD_GAP_S + RUN_OVERHEAD_S
    if "slowdown" in wanted:
        one = profile.slowdown_rounds * (
            len(profile.slowdown_functions) * (profile.slowdown_repeat * SLOWDOWN_CALL_S + 5.0) + 10.0
        )
        out["slowdown"] = one * (2 if beside_process else 1)
    if "mpki" in wanted:
        out["mpki"] = len(profile.mpki_functions) * (profile.mpki_s + RUN_OVERHEAD_S)
    if "interference" in wanted:
        out["interference"] = profile.interference_runs * (29.0 + RUN_OVERHEAD_S)
    return out


def clock_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


def eta_seconds(expected: dict[str, float], done: list[str], elapsed_s: float) -> float:
    """The time left: the experiments not done, at the pace of those done (actual / expected)."""
    planned_done = sum(expected[k] for k in done)
    pace = elapsed_s / planned_done if planned_done > 0 and elapsed_s > 0 else 1.0
    return sum(v for k, v in expected.items() if k not in done) * pace


def _ipc_label(windows: dict) -> str:
    """Fig 14's comparison with its windows: the aggressor's, and the victim's own reference window
    (``reproduce_runs.ipc_by_window``)."""
    inside = windows.get("inside")
    reference = next((name for name in ("before", "after") if name in windows), None)
    if not inside or reference is None:
        return "IPC inside the aggressor's window over the victim's alone"
    low, high = windows[reference]
    return (
        f"IPC inside the aggressor's window [{inside[0]:g}, {inside[1]:g}) s over the victim's alone "
        f"{reference} it [{low:g}, {high:g}) s"
    )


def judge(figure: Figure, results: dict[str, dict], isolation: str | None = None) -> rules.Verdict:
    """The figure's verdict (``_judge``), never one its own notes contradict (``rules.honest``)."""
    return rules.honest(_judge(figure, results, isolation))


def _judge(figure: Figure, results: dict[str, dict], isolation: str | None = None) -> rules.Verdict:
    """The verdict of ``figure`` from the experiments' results (``reproduce_runs``: one dict each);
    ``isolation`` picks the slowdown measured beside the main one (Figs 15, 16)."""
    failed = [f"{name}: {results[name]['error']}" for name in figure.experiments if results.get(name, {}).get("error")]
    if failed:
        return rules.Verdict(rules.NOT_REPRODUCED, "no result: the experiment failed (" + "; ".join(failed) + ")")
    data = {name: results.get(name) or {} for name in figure.experiments}
    if figure.key == "4":
        return rules.verdict_modes(data["modes"].get("phases") or [])
    if figure.key == "5":
        modes = data["modes"]
        return rules.verdict_breakdown(
            data["cold"].get("cold_calls") or [], modes.get("over_calls") or [], modes.get("other_calls") or []
        )
    if figure.key == "6-7":  # one run per function: its seconds, indicative at most
        mpki = data["mpki"]
        return rules.verdict_ratio_over_runs(
            "branch MPKI of the shortest function over the longest's",
            [mpki.get("short_mpki") or []],
            [mpki.get("long_mpki") or []],
        )
    if figure.key == "10-11":  # two phases of one run: indicative at most
        modes = data["modes"]
        return rules.verdict_ratio_over_runs(
            "memory bandwidth, busiest phase over quietest",
            [modes.get("bandwidth_high") or []],
            [modes.get("bandwidth_low") or []],
        )
    if figure.key == "14":
        found = data["interference"]
        runs = found.get("runs") or [found]  # results written before the runs were repeated: one run
        return rules.verdict_ratio_over_runs(
            _ipc_label(found.get("ipc_windows_s") or {}),
            [run.get("ipc_inside") or [] for run in runs],
            [run.get("ipc_reference") or [] for run in runs],
            above=False,
        )
    main = (data["slowdown"].get("by_isolation") or {}).get(isolation or data["slowdown"].get("primary") or "")
    if not main:
        return rules.Verdict(rules.NOT_REPRODUCED, "no slowdown result")
    if figure.key == "15":
        verdict = rules.verdict_short_long(main["functions"])
    else:
        exponent, low, high = main["exponent"]
        verdict = rules.verdict_exponent(
            exponent, low, high, [f for f in main["functions"] if f["function"] in main["fitted"]]
        )
    said = [main.get("baseline"), main.get("claims")]
    verdict.reason = "; ".join([verdict.reason, *(text for text in said if text)])
    return verdict
