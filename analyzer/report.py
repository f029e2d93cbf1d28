"""``report.html``: one self-contained page (plots embedded as base64 PNG, no external assets).

Built from the summary and the plots already written, so it shows exactly what ``summary.json``
says. It carries no generation time, so re-running gives the same bytes.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Iterable

from analyzer import chains as chains_mod
from analyzer import io_breakdown
from analyzer import tails as tails_mod

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.warn{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}
.fail{background:#f8d7da;padding:.5em 1em;border-left:4px solid #c82333}
.mode-over-invoked{background:#f5c6cb}.mode-under-invoked{background:#fde0b2}.mode-balanced{background:#d4edda}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}code{background:#f5f5f5;padding:0 3px}
"""


def fmt(value, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:.{digits}g}"
    return html.escape(str(value))


def table(headers: Iterable[str], rows: Iterable[Iterable], left: int = 1, row_class=None) -> str:
    headers = list(headers)
    out = ["<table><tr>"]
    out += [f"<th class='{'l' if i < left else ''}'>{html.escape(h)}</th>" for i, h in enumerate(headers)]
    out.append("</tr>")
    for k, row in enumerate(rows):
        cls = row_class(k) if row_class else ""
        out.append(f"<tr class='{cls}'>" + "".join(f"<td class='{'l' if i < left else ''}'>{fmt(v)}</td>" for i, v in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def image(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def failures_section(summary: dict) -> str:
    """The failures, first on the page (empty when every invocation succeeded)."""
    failures = summary["failures"]
    if not failures["total"]:
        return ""
    planned = summary["run"]["planned"]
    rows = [
        [g["function"], g["final_outcome"], g["count"], g["completion_latency_ms_p50"], g["completion_latency_ms_max"], g["example_error"]]
        for g in failures["by_function"]
    ]
    return (
        f"<h2>Failures: {failures['total']} of {planned} invocations did not succeed</h2><div class='fail'>"
        "<p>Kept out of every latency percentile, trend and mode below; their completion latency (planned send to "
        "function end, or to the answer) is shown here.</p>"
        + table(["function", "final outcome", "count", "latency p50 ms", "latency max ms", "first error"], rows, left=2)
        + "</div>"
    )


def write_report(run, summary: dict, path: Path) -> None:
    info = summary["run"]
    records = summary["records"]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>faasprof: {html.escape(info['test_name'])}</title><style>{STYLE}</style></head><body>"]
    parts.append(f"<h1>faasprof run <code>{html.escape(info['dir'])}</code></h1>")
    parts.append(failures_section(summary))
    finals = info["final_outcomes"]
    shown = [name for name, count in finals.items() if count or name == "success"]
    parts.append(
        table(
            ["test", "status", "created (UTC)", "planned", *shown],
            [[info["test_name"], info["status"], info.get("created_utc"), info["planned"], *(finals[name] for name in shown)]],
            left=3,
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
        f"Pause grace for the start classes: {fmt(records.get('pause_grace_ms'))} ms ({fmt(records.get('pause_grace_source'))}).</p>"
    )
    counts = summary["start_classes"]["counts"]
    parts.append("<p>Start classes: " + ", ".join(f"{html.escape(k)} {v}" for k, v in counts.items()) + f". <small>{html.escape(summary['start_classes']['rule'])}.</small></p>")
    if summary["warnings"]:
        parts.append("<h2>Warnings</h2><div class='warn'><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in summary["warnings"]) + "</ul></div>")

    parts.append("<h2>Latency modes per instance and steady phase</h2>")
    rows, modes = [], []
    for instance in summary["instances"]:
        for phase in instance["phases"]:
            modes.append(phase["mode"])
            rows.append(
                [
                    instance["instance"],
                    instance["function"],
                    phase["phase"],
                    f"{phase['steady_start_s']:.3g}–{phase['phase_end_s']:.3g}",
                    phase["mode"],
                    phase["offered_rps"],
                    phase["achieved_rps"],
                    phase["successful"],
                    phase["failures"],
                    phase["client_latency_ms_p50"],
                    phase["client_latency_ms_p99"],
                    phase["corrected_latency_ms_p99"],
                    phase["cold_fraction"],
                    phase["resumed_fraction"],
                    phase["mode_reasons"],
                ]
            )
    parts.append(
        table(
            ["instance", "function", "phase", "steady s", "mode", "offered/s", "achieved/s", "successful", "failed", "p50 ms", "p99 ms", "corr. p99 ms", "cold", "resumed", "evidence"],
            rows,
            left=5,
            row_class=lambda k: f"mode-{modes[k]}",
        )
    )
    parts.append(f"<p><small>Rule: {html.escape(summary['mode_rule'])}.</small></p>")

    parts.append("<h2>Per function (whole run)</h2>")
    frows = []
    for entry in summary["functions"]:
        frows.append(
            [
                entry["function"],
                entry["planned"],
                entry["successful"],
                entry["failures"],
                entry["client_latency_ms_p50"],
                entry["client_latency_ms_p90"],
                entry["client_latency_ms_p99"],
                entry["client_latency_ms_p99_9"],
                f"[{fmt(entry['client_latency_ms_p99_ci_low'])}, {fmt(entry['client_latency_ms_p99_ci_high'])}]",
                entry["wait_ms_mean"],
                entry["init_ms_mean"],
                entry["execution_ms_mean"],
                entry["overhead_ms_mean"],
                entry["gb_s"],
                entry["gb_s_100ms"],
            ]
        )
    parts.append(
        table(
            ["function", "planned", "successful", "failed", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "p99 95% CI", "wait ms", "init ms", "exec ms", "overhead ms", "GB-s", "GB-s (100 ms)"],
            frows,
        )
    )
    cost = summary["cost_gb_s"]
    parts.append(f"<p>Billed GB-seconds: {fmt(cost['gb_s'])} as recorded, {fmt(cost['gb_s_1ms'])} rounded to 1 ms, {fmt(cost['gb_s_100ms'])} rounded to 100 ms.</p>")

    parts.append(tails_mod.report_section(summary))
    parts.append(chains_mod.report_section(summary))
    if summary["monitors"]:
        parts.append("<h2>Monitors (mean over the steady phases, else over the run)</h2>")
        mrows = []
        for name, entry in summary["monitors"].items():
            for column, value in (entry.get("steady_mean") or entry.get("mean") or {}).items():
                mrows.append([name, column, value])
        parts.append(table(["monitor", "metric", "mean"], mrows, left=2))

    if summary.get("io"):  # io-* functions: analyzer/io_breakdown.py
        parts.append("<h2>I/O breakdown</h2><ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in io_breakdown.describe_text(summary["io"])) + "</ul>")
    parts.append("<h2>Plots</h2>")
    plots_dir = path.parent
    for name in summary.get("outputs", {}).get("plots", []):
        file = plots_dir / name
        if file.exists():
            parts.append(image(file, name))
    parts.append("</body></html>\n")
    path.write_text("".join(parts), encoding="utf-8")
