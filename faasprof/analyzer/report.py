"""``report.html``: one self-contained page (plots embedded as base64 PNG, no external assets).

Built from the summary and the plots already written, so it shows exactly what ``summary.json``
says. It carries no generation time, so re-running gives the same bytes. The page is the template
``templates/report.html`` (``faasprof.analyzer.templating``): one block per section, each filled by
the ``*_section`` function of the same name here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faasprof import rundir
from faasprof.analyzer import chains as chains_mod
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import io_breakdown, trace_fidelity
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer import tails as tails_mod
from faasprof.analyzer.markup import fmt, ms, pct, rate, seconds
from faasprof.analyzer.summary import Instance, RecordsInfo, RunInfo, StartClasses, Summary
from faasprof.analyzer.templating import Image, Table, embedded_image, render
from faasprof.monitoring.noise import noise_line


@dataclass
class FailuresView:
    """The failures, first on the page."""

    total: int
    planned: int
    pushback: str | None  # the line that says how the platform pushed back
    table: Table


def failures_section(summary: Summary) -> FailuresView | None:
    """The failures section's data; None when every invocation succeeded (no section)."""
    found = summary["failures"]
    if not found["total"]:
        return None
    rows: list[list[Any]] = [
        [
            g["function"],
            g["final_outcome"],
            g["count"],
            ms(g["completion_latency_ms_p50"]),
            ms(g["completion_latency_ms_max"]),
            g["example_error"],
        ]
        for g in found["by_function"]
    ]
    headers = ["function", "final outcome", "count", "completion p50", "completion max", "first error"]
    return FailuresView(
        total=found["total"],
        planned=summary["run"]["planned"],
        pushback=(summary["run"].get("pushback") or {}).get("line"),
        table=Table(headers, rows, left=2),
    )


def run_context(manifest: rundir.Manifest) -> list[tuple[str, str]]:
    """What a reader needs to judge the numbers: where, on what, with which faasprof, how long."""
    platform = manifest.platform
    host = manifest.host
    workload = manifest.workload
    tool = manifest.faasprof
    local = platform.get("localwhisk") or {}
    kind = platform.get("kind") or "–"
    version = platform.get("version")
    # Some platforms put a sentence in their version field: only a version-like string is shown.
    where = f"{kind} {version}" if version and len(str(version)) <= 24 else str(kind)
    if platform.get("embedded"):
        where += " (embedded)"
    cores = host.get("logical_cpus")
    cpu = host.get("cpu_model") or "–"
    if cores:
        cpu += f", {cores} logical CPUs" + (f" ({host['physical_cores']} cores)" if host.get("physical_cores") else "")
    commit = tool.get("git_commit")
    return [
        ("platform", where),
        (
            "isolation",
            str(
                local.get("isolation")
                or local.get("isolation_resolved")
                or ("–" if kind != "localwhisk" else "default")
            ),
        ),
        ("host CPU", cpu),
        ("kernel", str(host.get("kernel") or "–")),
        ("seed", str(workload.get("seed"))),
        ("faasprof", f"{tool.get('version', '–')}" + (f" (commit {commit[:12]})" if commit else "")),
        ("planned duration", seconds(workload.get("duration_s"))),
        ("created (UTC)", str(manifest.created_utc or "–")),
    ]


@dataclass
class OutcomesView:
    """The run's counts: final outcomes (the table), HTTP outcomes, records and start classes."""

    table: Table
    http: list[tuple[str, int]]  # the HTTP outcomes that happened, in HTTP_OUTCOMES order
    records: RecordsInfo
    start_classes: StartClasses
    warmup: str | None  # warmup_line: what the run's warm-up left out of the figures


def outcomes_section(summary: Summary) -> OutcomesView:
    info = summary["run"]
    finals = info["final_outcomes"]
    shown = [name for name, count in finals.items() if count or name == "success"]
    apart = _not_sent_interrupted(info)
    row = [info["test_name"], info["status"], info["planned"], *(finals[name] for name in shown), *apart.values()]
    return OutcomesView(
        table=Table(["test", "status", "planned", *shown, *apart], [row], left=2),
        http=[(name, count) for name, count in info["outcomes"].items() if count],
        records=summary["records"],
        start_classes=summary["start_classes"],
        warmup=warmup_line(info),
    )


def warnings_section(texts: list[str]) -> dict[str, list[str]]:
    """The warnings grouped by what they are about (collapsed on the page: the results come first)."""
    groups: dict[str, list[str]] = {}
    for text in texts:
        head = text.split(":", 1)[0] if ":" in text[:60] else "run"
        key = head.split(" phase ")[0]
        groups.setdefault(key, []).append(text)
    return groups


def _ci(entry: dict, prefix: str) -> str:
    low, high = entry.get(f"{prefix}_ci_low"), entry.get(f"{prefix}_ci_high")
    if low is None and high is None:
        return "–"
    return f"{ms(low)} – {ms(high)}"


def _calls(summary: Summary) -> dict[str, list[str]]:
    """The instances by the kind of their calls (the modes table has no column for it)."""
    out: dict[str, list[str]] = {"Blocking": [], "Non-blocking": []}
    for instance in summary["instances"]:
        if instance.get("planned") or instance["phases"]:
            out["Blocking" if instance.get("blocking") else "Non-blocking"].append(instance["instance"])
    return out


def _offered(instance: Instance, phase: dict) -> str:
    """The offered rate, or "closed loop" for a native run's (its workers call again when answered)."""
    return "closed loop" if instance.get("distribution") == rundir.CLOSED_LOOP else rate(phase["offered_rps"])


def not_invoked(summary: Summary) -> list[str]:
    """Instances the plan gave no invocation, each with why: muted (rate 0) or an empty window.
    They have no phase row, so the modes table alone would drop them without a word."""
    out = []
    for instance in summary["instances"]:
        if instance.get("planned") or instance["phases"]:
            continue
        why = "muted, rate 0" if instance.get("rate_rps") == 0 else "no invocation planned in its window"
        out.append(f"{instance['instance']} ({why})")
    return out


@dataclass(frozen=True)
class Evidence:
    instance: str
    phase: int
    mode: str
    reasons: str


@dataclass
class ModesView:
    """The modes per instance and steady phase: the definitions, the table, the evidence."""

    achieved_rule: str
    calls: list[tuple[str, list[str]]]  # ("Blocking", instances), ("Non-blocking", instances); none left out
    not_invoked: list[str]
    table: Table
    evidence: list[Evidence]
    rule: str


# Short column names under a header row that names the latency each group is and its n, so the
# table fits the page and reads against the tail table below.
MODE_HEADERS = [
    "instance",
    "function",
    "phase: steady window",
    "mode",
    "offered",
    "achieved",
    "failed",
    "n",
    "p50",
    "p99",
    "n",
    "p50",
    "p99",
    "cold",
    "resumed",
]
MODE_GROUPS = [
    ("", 7),
    ("completion latency (n: successful)", 3),
    ("client latency (blocking calls; –: non-blocking)", 3),
    ("starts", 2),
]


def _mode_row(instance: Instance, phase: dict) -> list[Any]:
    blocking = bool(phase.get("blocking"))
    return [
        instance["instance"],
        instance["function"],
        f"{phase['phase']}: {phase['steady_start_s']:.3g}–{phase['phase_end_s']:.3g} s",
        phase["mode"],
        _offered(instance, phase),
        rate(phase["achieved_rps"]),
        phase["failures"],
        phase.get("completion_latency_ms_n"),
        ms(phase.get("completion_latency_ms_p50")),
        ms(phase.get("completion_latency_ms_p99")),
        phase.get("client_latency_ms_n") if blocking else "–",
        ms(phase["client_latency_ms_p50"]) if blocking else "–",
        ms(phase["client_latency_ms_p99"]) if blocking else "–",
        pct(phase["cold_fraction"]),
        pct(phase["resumed_fraction"]),
    ]


def modes_section(summary: Summary) -> ModesView:
    rows, classes, evidence = [], [], []
    for instance in summary["instances"]:
        for phase in instance["phases"]:
            rows.append(_mode_row(instance, phase))
            classes.append(f"mode-{phase['mode']}")
            evidence.append(Evidence(instance["instance"], phase["phase"], phase["mode"], phase["mode_reasons"] or ""))
    headers, groups = list(MODE_HEADERS), list(MODE_GROUPS)
    if not any(phase.get("blocking") for instance in summary["instances"] for phase in instance["phases"]):
        # No blocking call: there is no client latency to show (a 202 says nothing of the function).
        headers = headers[:10] + headers[13:]
        rows = [row[:10] + row[13:] for row in rows]
        groups = [group for group in groups if not group[0].startswith("client")]
    return ModesView(
        achieved_rule=summary.get("achieved_rule", ""),
        calls=[(label, names) for label, names in _calls(summary).items() if names],
        not_invoked=not_invoked(summary),
        table=Table(headers, rows, left=4, row_classes=classes, groups=groups),
        evidence=evidence,
        rule=summary["mode_rule"],
    )


FUNCTION_HEADERS = [
    "function",
    "planned",
    "successful",
    "failed",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "p99 95% CI",
    "mean wait",
    "mean init",
    "mean exec",
    "mean overhead (blocking)",
    "GB-s",
    "GB-s (100 ms)",
]


@dataclass
class FunctionsView:
    table: Table
    cost: dict[str, float]  # the run's GB-seconds (summary cost_gb_s)


def functions_section(summary: Summary) -> FunctionsView:
    """Per function over the whole run: completion latency of successful invocations and cost."""
    prefix = "completion_latency_ms"
    rows = [
        [
            entry["function"],
            entry["planned"],
            entry["successful"],
            entry["failures"],
            ms(entry.get(f"{prefix}_p50")),
            ms(entry.get(f"{prefix}_p90")),
            ms(entry.get(f"{prefix}_p99")),
            ms(entry.get(f"{prefix}_p99_9")),
            _ci(entry, f"{prefix}_p99"),
            ms(entry["wait_ms_mean"]),
            ms(entry["init_ms_mean"]),
            ms(entry["execution_ms_mean"]),
            ms(entry["overhead_ms_mean"]),
            fmt(entry["gb_s"]),
            fmt(entry["gb_s_100ms"]),
        ]
        for entry in summary["functions"]
    ]
    return FunctionsView(Table(FUNCTION_HEADERS, rows), summary["cost_gb_s"])


@dataclass
class MonitorsView:
    table: Table
    notes: list[str]  # what was left out of the table, and why


def monitors_section(run, summary: Summary) -> MonitorsView | None:
    """The monitors' means per metric (per host in a run that measured others); None without monitors."""
    if not run.monitors:
        return None
    rows, notes = _monitor_rows(run, summary)
    per_host = ["host"] if run.hosts else []
    return MonitorsView(
        Table([*per_host, "monitor", "metric", "plotted as", "mean"], rows, left=3 + len(per_host)), notes
    )


def io_section(summary: Summary) -> list[str]:
    """The I/O breakdown in lines (io-* functions: faasprof/analyzer/io_breakdown.py); none for other runs."""
    return io_breakdown.describe_text(summary["io"]) if summary.get("io") else []


def plots_section(summary: Summary, analysis_dir: Path) -> list[Image]:
    """The plots written, embedded (a plot named but not written is left out)."""
    plots = summary.get("outputs", {}).get("plots", [])
    return [embedded_image(analysis_dir / name, name) for name in plots if (analysis_dir / name).exists()]


def write_report(run, summary: Summary, path: Path) -> None:
    """``report.html`` of an analyzed run (templates/report.html), from its summary and plots."""
    html = render(
        "report.html",
        title=f"faasprof: {summary['run']['test_name']}",
        dir=summary["run"]["dir"],
        # How the figures were computed: in memory, or out of core with the engine's memory limit.
        context=[*run_context(run.manifest), ("figures computed", run.engine)],
        failures=failures_section(summary),
        outcomes=outcomes_section(summary),
        warnings=warnings_section(summary["warnings"]),
        modes=modes_section(summary),
        functions=functions_section(summary),
        tails=tails_mod.report_view(summary),
        chains=chains_mod.report_view(summary),
        fidelity=trace_fidelity.report_view(summary),
        hosts=hosts_mod.report_view(summary.get("hosts") or {}),
        monitors=monitors_section(run, summary),
        io=io_section(summary),
        plots=plots_section(summary, path.parent),
    )
    path.write_text(html, encoding="utf-8")


def _monitor_rows(run, summary: Summary) -> tuple[list[list], list[str]]:
    """The monitors table's rows (a host's first in a run that measured other hosts: each host's
    rows apart) and the notes on what was left out."""
    hosts = summary.get("hosts") or {}
    local = hosts.get("local") or ""
    remote = hosts.get("remote") or {}
    rows, notes = [], []
    for host, stats in [(local, summary["monitors"]), *((name, entry["monitors"]) for name, entry in remote.items())]:
        for name, frame in run.monitors.items():
            measured = hosts_mod.rows_of(frame, host, local) if remote else frame
            if remote and not len(measured):
                continue
            # What its collector declares it plots (``Collector.plots``), as the plot labels it.
            plots, left_out = plots_mod.declared_plots(name, measured)
            notes += [f"{host}: {note}" for note in left_out] if remote else left_out
            entry = stats.get(name) or {}
            means = entry.get("steady_mean") or entry.get("mean") or {}
            for plot in plots:
                row = [name, plot.column, plot.axis_label, fmt(means.get(plot.column))]
                rows.append([host, *row] if remote else row)
    return rows, notes


def _not_sent_interrupted(info: RunInfo) -> dict[str, int]:
    """The run's invocations planned after it stopped, under their label (none: empty)."""
    count = info.get("not_sent_interrupted")
    return {"not sent: interrupted": count} if count else {}


def warmup_line(info: RunInfo) -> str | None:
    """What the run's warm-up left out of the figures, in one line (None: no warm-up)."""
    warmup = info.get("warmup") or {}
    if not warmup.get("warmup_s"):
        return None
    return (
        f"warm-up: the first {warmup['warmup_s']:g} s ({warmup['invocations']} invocations) were run, are counted "
        "among the outcomes and left out of every figure (percentiles, breakdown, modes, start classes, tails)"
    )


def summary_lines(summary: Summary) -> list[str]:
    """The analysis in a few lines: records, failures first, outcomes, one line per instance and phase."""
    records = summary["records"]
    lines = [
        f"{summary['run']['dir']}: {summary['run']['planned']} planned, status {summary['run']['status']}; "
        f"records {records['found']} found, {records['missing']} missing (source {records['source']})"
    ]
    failures = summary["failures"]
    finals = summary["run"]["final_outcomes"]
    if failures["total"]:
        kinds = ", ".join(f"{count} {name}" for name, count in finals.items() if count and name != "success")
        lines.append(
            f"  FAILURES: {failures['total']} of {summary['run']['planned']} did not succeed ({kinds}); kept out of the latency figures"
        )
    pushback = (summary["run"].get("pushback") or {}).get("line")
    if pushback:
        lines.append(f"  {pushback}")
    apart = "".join(
        f"; {name} {count} (planned after the stop at {summary['run']['end_s']:.3g} s)"
        for name, count in _not_sent_interrupted(summary["run"]).items()
    )
    lines.append(
        f"  outcomes: {finals['success']} success"
        + "".join(f", {count} {name}" for name, count in finals.items() if count and name != "success")
        + apart
    )
    lines += [f"  {name}: not invoked" for name in not_invoked(summary)]
    warmup = warmup_line(summary["run"])
    if warmup:
        lines.append(f"  {warmup}")
    lines += hosts_mod.summary_lines(summary.get("hosts") or {})
    noise = summary.get("host_noise")
    if noise:
        lines.append("  " + noise_line(noise))
    for instance in summary["instances"]:
        for phase in instance["phases"]:
            # Completion latency for every call (planned send → function end); the client's own
            # latency is added for blocking calls only, whose answer comes at the function's end.
            client = f" (client p50 {ms(phase['client_latency_ms_p50'])})" if phase.get("blocking") else ""
            lines.append(
                f"  {instance['instance']:<16} phase {phase['phase']} {phase['mode']:<13} "
                f"offered {_offered(instance, phase)} achieved {rate(phase['achieved_rps'])} "
                f"completion latency p50 {ms(phase.get('completion_latency_ms_p50'))} p99 {ms(phase.get('completion_latency_ms_p99'))}{client} "
                f"cold {pct(phase['cold_fraction'])} resumed {pct(phase['resumed_fraction'])}"
            )
    return lines
