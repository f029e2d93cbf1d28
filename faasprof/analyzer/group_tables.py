"""The in-memory statistics tables of a loaded run: ``phase_stats`` (one row per instance × steady
phase, with its mode) and ``function_stats`` (one row per function over the run after its warm-up),
cut from the invocation frame one group at a time (``group_tables``); ``phase_row`` makes one
``phase_stats`` row for this path and the out-of-core one (``ooc_groups``) alike; and the
summary's figures of the whole frame (``frame_figures``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import outofcore
from faasprof.analyzer import stats as stats_mod
from faasprof.analyzer import tails as tails_mod
from faasprof.analyzer.failures import failure_summary, pushback_summary
from faasprof.outcomes import FINAL_OUTCOMES, HTTP_OUTCOMES

LATENCY_KIND = "completion: planned send → function end (completion_latency_ms)"
ANSWER_LATENCIES = (
    "client_latency_ms",
    "corrected_latency_ms",
)  # the answer's times: kept for blocking calls only per function
CLIENT_LATENCY_KIND = "client: send → answer (client_latency_ms; blocking calls only)"


def phase_row(
    spec: dict,
    phase: dict,
    block: dict,
    trend: dict,
    reference: dict | None,
    mode: str,
    reasons: list[str],
    margin: float,
    pause_grace_ms: float | None,
) -> dict:
    """One ``phase_stats`` row: an instance × steady phase's figures (``stats.group_stats``'
    ``block``, ``stats.latency_trend``'s ``trend``) with its mode; both engines make it here."""
    name = spec["instance"]
    return {
        "instance": name,
        "function": spec["function"],
        "phase": phase["phase"],
        "phase_start_s": phase["start_s"],
        "steady_start_s": phase["steady_start_s"],
        "phase_end_s": phase["end_s"],
        "rate_rps": spec["rate_rps"],
        "blocking": spec["blocking"],
        # Which latency the headline figures are: completion for every call; the client's
        # own latency only means the function's for calls answered at its end.
        "latency_kind": LATENCY_KIND,
        "client_latency_kind": CLIENT_LATENCY_KIND if spec["blocking"] else None,
        "mode": mode,
        "mode_reasons": "; ".join(reasons),
        # How near the over-invoked rules came to firing (>= 1 fired), and whether that was close.
        "mode_evidence_over_threshold": margin,
        "mode_close": stats_mod.is_close(margin) if mode != "unknown" else False,
        "warm_rate_rps": stats_mod.warm_rate_rps(pause_grace_ms, block.get("duration_ms_p50")),
        # The queueing rule's yardstick (rule 2(d)), beside the evidence it judged.
        "reference_latency_ms": (reference or {}).get("completion_latency_ms_p50"),
        "reference_rate_rps": (reference or {}).get("rate_rps"),
        "reference_source": (reference or {}).get("source"),
        **{f"trend_{k}": v for k, v in trend.items()},
        **{k: v for k, v in block.items() if k != "window_s"},
    }


def group_tables(
    frame: pd.DataFrame,
    specs: list[dict],
    phase_list: list[dict],
    references: dict[str, dict],
    end_s: float | None = None,
    pause_grace_ms: float | None = None,
    warmup_s: float = 0.0,
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """``phase_stats`` (one row per instance × steady phase, with the mode), ``function_stats``
    (one row per function over the whole run after its warm-up ``warmup_s``, up to ``end_s`` when
    it stopped early) and the stability warnings. ``references``: each function's reference latency for
    the queueing rule (``stats.latency_references``); ``pause_grace_ms``: the platform's, the lower
    edge of the balanced band (``stats.warm_rate_rps``)."""
    intended = frame["intended_s"].to_numpy()
    warnings: list[str] = []
    phase_rows = []
    # The statistics read these columns only: groups are cut from them, one at a time, by position,
    # so no copy of the whole frame is ever held per instance.
    slim = frame[[c for c in stats_mod.STATS_COLUMNS if c in frame.columns]]
    by_instance = slim.groupby("instance", observed=True, sort=False).indices
    for phase in phase_list:
        if phase.get("in_warmup"):
            continue  # wholly within the run's warm-up: run, but no figure
        for name in phase["instances"]:
            if name not in by_instance:
                continue
            positions = by_instance[name]
            t = intended[positions]
            # The whole instance only for its end times; the statistics take the steady rows.
            rows_all = slim[list(stats_mod.END_COLUMNS)].take(positions)
            rows = slim.take(positions[(t >= phase["steady_start_s"]) & (t < phase["end_s"])])
            spec = next(s for s in specs if s["instance"] == name)
            done_s = stats_mod.end_times_s(rows_all, spec["blocking"])
            if spec["blocking"] or not rows_all["has_record"].any():
                latency_column = "corrected_latency_ms"
            else:  # the client only saw 202s: the platform's clock says when work was done
                latency_column = "platform_latency_ms"
            block = stats_mod.group_stats(rows, phase["steady_start_s"], phase["end_s"], done_s)
            trend = stats_mod.latency_trend(rows, phase["steady_start_s"], phase["end_s"], latency_column)
            trend["latency"] = latency_column.removesuffix("_ms").replace("_", " ")
            # The queueing rule asks whether the queue still stands at the end (not a ramp).
            trend["completion_last_third_median_ms"] = stats_mod.latency_trend(
                rows, phase["steady_start_s"], phase["end_s"], "completion_latency_ms"
            )["last_third_median_ms"]
            reference = references.get(spec["function"])
            mode, reasons = stats_mod.decide_mode(block, trend, reference, pause_grace_ms)
            margin = stats_mod.mode_margin(stats_mod.over_scores(block, trend, reference))
            where = f"{name} phase {phase['phase']}"
            warnings.extend(stats_mod.stability_warnings(where, block))
            phase_rows.append(phase_row(spec, phase, block, trend, reference, mode, reasons, margin, pause_grace_ms))
    phase_stats = pd.DataFrame(phase_rows)

    function_rows = []
    blocking_instances = {spec["instance"] for spec in specs if spec["blocking"]}
    for function, positions in sorted(
        slim.groupby("function", observed=True, sort=True).indices.items(), key=lambda item: str(item[0])
    ):
        if end_s is not None:  # what was planned after the stop was never due while the run ran
            positions = positions[intended[positions] < end_s]
        positions = positions[intended[positions] >= warmup_s]
        rows = slim.take(positions)
        t = rows["intended_s"].to_numpy()
        start = float(np.nanmin(t)) if len(t) else 0.0
        end = float(np.nanmax(t)) if len(t) else 0.0
        # Achieved by the one rule (stats.ACHIEVED_RULE): each instance's ends as its calls end
        # (a non-blocking call at its record's end, not its 202), never above what was offered.
        blocking_of = {s["instance"]: s["blocking"] for s in specs}
        done_s = np.concatenate(
            [np.empty(0)]
            + [
                stats_mod.end_times_s(part, blocking_of.get(str(name), True))
                for name, part in rows.groupby("instance", observed=True, sort=False)
            ]
        )
        block = stats_mod.group_stats(rows, start, max(end, start + 1e-9) + 1e-9, done_s)
        blocking = stats_mod.label_mask(rows["instance"], blocking_instances)
        block.update(blocking_answers(rows, blocking))
        calls = "blocking" if blocking.all() else "non-blocking" if not blocking.any() else "mixed"
        modes = phase_stats[phase_stats["function"] == function]["mode"].tolist() if len(phase_stats) else []
        function_rows.append(
            {
                "function": str(function),
                "calls": calls,
                "modes": ",".join(sorted(set(modes))),
                **{k: v for k, v in block.items() if k != "window_s"},
            }
        )
    function_stats = pd.DataFrame(function_rows)
    return phase_stats, function_stats, warnings


def blocking_answers(rows: pd.DataFrame, blocking: np.ndarray) -> dict:
    """Client and corrected latency (send/plan → answer) of a function's successful blocking calls
    only: a non-blocking call's answer is a 202 before its function ran, and pooling the two kinds
    in one column gives a figure of neither (``function_stats``; each ``phase_stats`` row is one
    instance, one kind)."""
    success = rows["successful"].to_numpy(dtype=bool) & blocking
    out = {}
    for column in ANSWER_LATENCIES:
        out.update(stats_mod.percentile_block(rows[column].to_numpy(dtype="float64")[success], column))
    return out


def frame_figures(run) -> outofcore.FrameFigures:
    """The summary's figures of the whole invocation frame, from the loaded frame (in memory)."""
    frame = run.invocations
    outcome_counts = {name: int((frame["outcome"] == name).sum()) for name in HTTP_OUTCOMES}
    final_counts = {name: int((frame["final_outcome"] == name).sum()) for name in FINAL_OUTCOMES}
    # Planned after the run stopped: apart from the final outcomes, which count what was due.
    unsent_after = int(stats_mod.unsent_after_end(frame, run.end_s).sum())
    final_counts["not_sent"] -= unsent_after
    after_warmup = frame["start_class"][~frame["warmup"].to_numpy(dtype=bool)]
    return outofcore.FrameFigures(
        planned=int(len(frame)),
        outcomes=outcome_counts,
        final_outcomes=final_counts,
        not_sent_interrupted=unsent_after,
        warmup_invocations=int(frame["warmup"].sum()),
        start_classes={name: int((after_warmup == name).sum()) for name in frames_mod.START_CLASSES},
        pushback=pushback_summary(frame, outcome_counts),
        failures=failure_summary(frame, run.end_s),
        tail_ratios=tails_mod.tail_ratios(frame, run.manifest),
        cost_gb_s=frames_mod.cost_totals(frame),
    )
