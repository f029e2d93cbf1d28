"""``report.html``: one self-contained page (plots embedded as base64 PNG, no external assets).

Built from the summary and the plots already written, so it shows exactly what ``summary.json``
says. It carries no generation time, so re-running gives the same bytes.
"""

from __future__ import annotations

import html
from pathlib import Path

from faasprof import rundir
from faasprof.analyzer import chains as chains_mod
from faasprof.analyzer import hosts as hosts_mod
from faasprof.analyzer import io_breakdown
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer import tails as tails_mod
from faasprof.analyzer.markup import fmt, image, ms, page, pct, rate, seconds, table
from faasprof.monitoring.noise import noise_line


def failures_section(summary: dict) -> str:
    """The failures, first on the page (empty when every invocation succeeded)."""
    failures = summary["failures"]
    if not failures["total"]:
        return ""
    planned = summary["run"]["planned"]
    pushback = (summary["run"].get("pushback") or {}).get("line")
    rows = [
        [
            g["function"],
            g["final_outcome"],
            g["count"],
            ms(g["completion_latency_ms_p50"]),
            ms(g["completion_latency_ms_max"]),
            g["example_error"],
        ]
        for g in failures["by_function"]
    ]
    return (
        f"<h2>Failures: {failures['total']} of {planned} invocations did not succeed</h2><div class='fail'>"
        "<p>Kept out of every latency percentile, trend and mode below; their completion latency (planned send to "
        "function end, or to the answer) is shown here.</p>"
        + (f"<p><b>{html.escape(pushback)}</b></p>" if pushback else "")
        + table(["function", "final outcome", "count", "completion p50", "completion max", "first error"], rows, left=2)
        + "</div>"
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


def _context_section(manifest: "rundir.Manifest") -> str:
    cells = "".join(
        f"<tr><th class='l'>{html.escape(k)}</th><td class='l'>{html.escape(v)}</td></tr>"
        for k, v in run_context(manifest)
    )
    return f"<table class='ctx'>{cells}</table>"


def _warnings_section(warnings: list[str]) -> str:
    """Warnings grouped by what they are about, collapsed: the results come first."""
    if not warnings:
        return ""
    groups: dict[str, list[str]] = {}
    for text in warnings:
        head = text.split(":", 1)[0] if ":" in text[:60] else "run"
        key = head.split(" phase ")[0]
        groups.setdefault(key, []).append(text)
    parts = [
        f"<details class='warn'><summary>Warnings: {len(warnings)} in {len(groups)} groups (click to open)</summary>"
    ]
    for key, texts in groups.items():
        parts.append(
            f"<details><summary>{html.escape(key)} ({len(texts)})</summary><ul>"
            + "".join(f"<li>{html.escape(t)}</li>" for t in texts)
            + "</ul></details>"
        )
    parts.append("</details>")
    return "".join(parts)


def _ci(entry: dict, prefix: str) -> str:
    low, high = entry.get(f"{prefix}_ci_low"), entry.get(f"{prefix}_ci_high")
    if low is None and high is None:
        return "–"
    return f"{ms(low)} – {ms(high)}"


def _calls(summary: dict) -> dict[str, list[str]]:
    """The instances by the kind of their calls (the modes table has no column for it)."""
    out: dict[str, list[str]] = {"Blocking": [], "Non-blocking": []}
    for instance in summary["instances"]:
        if instance.get("planned") or instance["phases"]:
            out["Blocking" if instance.get("blocking") else "Non-blocking"].append(instance["instance"])
    return out


def _offered(instance: dict, phase: dict) -> str:
    """The offered rate, or "closed loop" for a native run's (its workers call again when answered)."""
    return "closed loop" if instance.get("distribution") == rundir.CLOSED_LOOP else rate(phase["offered_rps"])


def not_invoked(summary: dict) -> list[str]:
    """Instances the plan gave no invocation, each with why: muted (rate 0) or an empty window.
    They have no phase row, so the modes table alone would drop them without a word."""
    out = []
    for instance in summary["instances"]:
        if instance.get("planned") or instance["phases"]:
            continue
        why = "muted, rate 0" if instance.get("rate_rps") == 0 else "no invocation planned in its window"
        out.append(f"{instance['instance']} ({why})")
    return out


def write_report(run, summary: dict, path: Path) -> None:
    info = summary["run"]
    records = summary["records"]
    parts = [f"<h1>faasprof run <code>{html.escape(info['dir'])}</code></h1>"]
    parts.append(_context_section(run.manifest))
    parts.append(failures_section(summary))
    finals = info["final_outcomes"]
    shown = [name for name, count in finals.items() if count or name == "success"]
    apart = _not_sent_interrupted(info)
    parts.append(
        table(
            ["test", "status", "planned", *shown, *apart],
            [[info["test_name"], info["status"], info["planned"], *(finals[name] for name in shown), *apart.values()]],
            left=2,
        )
    )
    outcomes = info["outcomes"]
    parts.append(
        "<p>HTTP outcomes (what the invoker saw; a non-blocking 202 is <code>ok</code> whatever the function did): "
        + ", ".join(f"{html.escape(k)} {v}" for k, v in outcomes.items() if v)
        + ". Final outcomes join them with the activation records; latency figures cover <code>success</code> only.</p>"
    )
    parts.append(
        f"<p>Activation records: source <code>{fmt(records.get('source'))}</code>, {fmt(records.get('found'))} found, "
        f"{fmt(records.get('missing'))} missing of {fmt(records.get('with_activation_id'))} invocations with an activation id. "
        f"Pause grace for the start classes: {ms(records.get('pause_grace_ms'))} ({fmt(records.get('pause_grace_source'))}).</p>"
    )
    counts = summary["start_classes"]["counts"]
    parts.append(
        "<p>Start classes: "
        + ", ".join(f"{html.escape(k)} {v}" for k, v in counts.items())
        + f". <small>{html.escape(summary['start_classes']['rule'])}.</small></p>"
    )
    parts.append(_warnings_section(summary["warnings"]))

    parts.append("<h2>Latency modes per instance and steady phase</h2>")
    idle = not_invoked(summary)
    parts.append(
        "<p class='def'><b>Completion latency</b> (the headline for every call): planned send → function end "
        "(the answer for blocking calls, the activation record's end for non-blocking ones), successful invocations only. "
        "<b>Client latency</b> (send → answer) is shown for blocking calls only: a non-blocking call is answered "
        "before its function runs. <b>Achieved</b>: "
        + html.escape(summary.get("achieved_rule", ""))
        + "."
        + "".join(
            f" {label} calls: {html.escape(', '.join(names))}." for label, names in _calls(summary).items() if names
        )
        + (f" Not invoked: {html.escape(', '.join(idle))}." if idle else "")
        + "</p>"
    )
    rows, modes, evidence = [], [], []
    for instance in summary["instances"]:
        for phase in instance["phases"]:
            modes.append(phase["mode"])
            blocking = bool(phase.get("blocking"))
            rows.append(
                [
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
            )
            evidence.append(
                f"<li><b>{html.escape(instance['instance'])}</b>, phase {phase['phase']}: {html.escape(phase['mode'])}: {html.escape(phase['mode_reasons'] or '')}</li>"
            )
    # Short column names under a header row that names the latency each group is and its n, so
    # the table fits the page and reads against the tail table below.
    headers = [
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
    groups = [
        ("", 7),
        ("completion latency (n: successful)", 3),
        ("client latency (blocking calls; –: non-blocking)", 3),
        ("starts", 2),
    ]
    if not any(phase.get("blocking") for instance in summary["instances"] for phase in instance["phases"]):
        # No blocking call: there is no client latency to show (a 202 says nothing of the function).
        headers = headers[:10] + headers[13:]
        rows = [row[:10] + row[13:] for row in rows]
        groups = [group for group in groups if not group[0].startswith("client")]
    parts.append(
        table(
            headers,
            rows,
            left=4,
            row_class=lambda k: f"mode-{modes[k]}",
            groups=groups,
        )
    )
    parts.append("<p>Evidence for each mode:</p><ul class='evidence'>" + "".join(evidence) + "</ul>")
    parts.append(f"<p><small>Rule: {html.escape(summary['mode_rule'])}.</small></p>")

    parts.append("<h2>Per function (whole run): completion latency of successful invocations</h2>")
    frows = []
    for entry in summary["functions"]:
        prefix = "completion_latency_ms"
        frows.append(
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
        )
    parts.append(
        table(
            [
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
            ],
            frows,
        )
    )
    cost = summary["cost_gb_s"]
    parts.append(
        f"<p>Billed GB-seconds: {fmt(cost['gb_s'])} as recorded, {fmt(cost['gb_s_1ms'])} rounded to 1 ms, {fmt(cost['gb_s_100ms'])} rounded to 100 ms.</p>"
    )

    parts.append(tails_mod.report_section(summary))
    parts.append(chains_mod.report_section(summary))
    parts.append(hosts_mod.report_section(summary.get("hosts") or {}))
    if run.monitors:
        parts.append("<h2>Monitors (mean over the steady phases, else over the run)</h2>")
        mrows, notes = _monitor_rows(run, summary)
        per_host = ["host"] if run.hosts else []
        parts.append(table([*per_host, "monitor", "metric", "plotted as", "mean"], mrows, left=3 + len(per_host)))
        if notes:
            parts.append("<p><small>" + "; ".join(html.escape(n) for n in notes) + ".</small></p>")

    if summary.get("io"):  # io-* functions: faasprof/analyzer/io_breakdown.py
        parts.append(
            "<h2>I/O breakdown</h2><ul>"
            + "".join(f"<li>{html.escape(line)}</li>" for line in io_breakdown.describe_text(summary["io"]))
            + "</ul>"
        )
    parts.append("<h2>Plots</h2>")
    plots_dir = path.parent
    for name in summary.get("outputs", {}).get("plots", []):
        file = plots_dir / name
        if file.exists():
            parts.append(image(file, name))
    path.write_text(page(f"faasprof: {info['test_name']}", parts), encoding="utf-8")


def _monitor_rows(run, summary: dict) -> tuple[list[list], list[str]]:
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


def _not_sent_interrupted(info: dict) -> dict[str, int]:
    """The run's invocations planned after it stopped, under their label (none: empty)."""
    count = info.get("not_sent_interrupted")
    return {"not sent: interrupted": count} if count else {}


def summary_lines(summary: dict) -> list[str]:
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
    lines += hosts_mod.summary_lines(summary.get("hosts") or {})
    if summary.get("host_noise"):
        lines.append("  " + noise_line(summary["host_noise"]))
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
