"""The result of ``faasprof reproduce``: ``reproduce.json`` (format-versioned) and ``report.html``
(``faasprof/analyzer/templates/reproduce.html``, in the run report's look), with the same content.

Per figure: the paper's finding and its number, this host's number with its 95 % interval and
sample count, the verdict and its reason, the rule, the platform it ran on, the plots (embedded),
the run directories used (linked; each re-analysable with ``faasprof analyze``) and, for figures
measured on localwhisk, what faasprof/localwhisk/localwhisk-vs-openwhisk.md says about how far localwhisk is from
OpenWhisk for what the figure measures (quoted from the document as it stands).

``reproduce.json`` format versions (``faasprof.experiments.reproduce.REPRODUCE_FORMAT_VERSION``):
1: first version; compatible additions: the verdict ``indicative`` (beyond noise on fewer functions,
runs or cold starts than the finding needs: ``reproduce_rules``) and its count, and each figure's
``commands`` (``faasprof analyze`` of each run directory, its path as the user's working directory
reaches it: the run directories' ``run_dirs`` are relative to the reproduce folder, for its links).
"""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from faasprof import __version__, rundir
from faasprof.analyzer.markup import fmt
from faasprof.analyzer.templating import Image, Table, cell, embedded_image, render
from faasprof.experiments import reproduce as plan
from faasprof.experiments import reproduce_rules as rules
from faasprof.paths import COMPARISON_DOC_PATH

COMPARISON_DOC = COMPARISON_DOC_PATH
PAPER = (
    'M. Shahrad, J. Balkind, D. Wentzlaff, "Architectural Implications of Function-as-a-Service Computing", '
    "MICRO 2019 (doi:10.1145/3352460.3358296)"
)
VERDICT_CLASS = {
    rules.REPRODUCED: "mode-balanced",
    rules.NOT_REPRODUCED: "mode-over-invoked",
    rules.NOT_MEASURABLE: "mode-under-invoked",
    rules.INDICATIVE: "mode-under-invoked",
}


def comparison_items(path: Path = COMPARISON_DOC) -> dict[int, str]:
    """The numbered items of the comparison document's "What differs" list, as plain text."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    items: dict[int, str] = {}
    current = None
    for line in text.partition("## What differs")[2].splitlines():
        if line.startswith("## "):
            break
        start = re.match(r"(\d+)\. (.*)", line)
        if start:
            current = int(start.group(1))
            items[current] = start.group(2).strip()
        elif current is not None and line.startswith("   ") and line.strip():
            items[current] += " " + line.strip()
        elif not line.strip():
            current = None
    return {k: re.sub(r"\*\*(.+?)\*\*", r"\1", v).replace("`", "") for k, v in items.items()}


def clean(value: Any) -> Any:
    """JSON-ready: non-finite floats → None, numpy → Python, paths → text."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(float(value)) else round(float(value), 6)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, Path):
        return str(value)
    return value


def _relative(paths: list[str], out: Path) -> list[str]:
    return [os.path.relpath(p, out) for p in paths if p]


def from_cwd(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> str:
    """``path`` as a command typed in ``cwd`` (the directory the user ran ``reproduce`` in) reaches
    it: relative where it lies below ``cwd``, else absolute."""
    where = Path(cwd or os.getcwd()).resolve()
    target = Path(path).resolve()
    try:
        return str(target.relative_to(where))
    except ValueError:
        return str(target)


def analyze_commands(run_dirs: list[str], out: Path, cwd: str | os.PathLike | None = None) -> list[str]:
    """``faasprof analyze DIR`` for each of ``run_dirs`` (relative to ``out``, as a figure keeps
    them), each runnable from ``cwd``."""
    return [f"faasprof analyze {shlex.quote(from_cwd(Path(out) / d, cwd))}" for d in run_dirs]


def figure_entry(
    figure: plan.Figure,
    verdict: rules.Verdict,
    result: dict[str, dict],
    platform: str,
    out: Path,
    quotes: dict[int, str],
    beside: dict | None = None,
) -> dict:
    """One figure of ``reproduce.json``."""
    runs = [d for name in figure.experiments for d in (result.get(name) or {}).get("run_dirs") or []]
    plots = [
        p
        for name in figure.experiments
        for p in (result.get(name) or {}).get("plots") or []
        if Path(p).is_file() and (not figure.plots or Path(p).name in figure.plots)
    ]
    if figure.key in ("4", "5", "14") and result.get("capacity", {}).get("run_dirs"):
        runs += result["capacity"]["run_dirs"]
    measured = verdict.verdict != rules.NOT_MEASURABLE
    entry = {
        "figure": figure.key,
        "numbers": list(figure.numbers),
        "title": figure.title,
        "finding": figure.finding,
        "paper_value": figure.paper_value,
        "rule": figure.rule,
        "needs": [plan.HARDWARE[k] for k in figure.needs],
        **verdict.to_json(),
        "platform": platform if measured else None,
        "run_dirs": _relative(sorted(dict.fromkeys(runs)), out),
        "commands": analyze_commands(_relative(sorted(dict.fromkeys(runs)), out), out),
        "plots": _relative(plots, out),
        "localwhisk_vs_openwhisk": [{"item": k, "text": quotes[k]} for k in figure.comparison_items if k in quotes]
        if measured and platform.startswith("localwhisk")
        else [],
    }
    if "capacity" in result and figure.key in ("4", "5", "14") and not result["capacity"].get("error"):
        entry["capacity"] = {k: result["capacity"].get(k) for k in ("capacity_rps", "source")}
    if beside:
        entry["beside"] = beside
    return clean(entry)


def summary_counts(figures: list[dict]) -> dict[str, int]:
    return {
        v: sum(1 for f in figures if f["verdict"] == v)
        for v in (rules.REPRODUCED, rules.INDICATIVE, rules.NOT_REPRODUCED, rules.NOT_MEASURABLE)
    }


def document(figures: list[dict], not_judged: list[int], context: dict) -> dict:
    """The whole of ``reproduce.json``."""
    return clean(
        {
            "format_version": plan.REPRODUCE_FORMAT_VERSION,
            "kind": "reproduce",
            "generated_by": {"faasprof": __version__, "git_commit": rundir.git_commit()},
            "paper": PAPER,
            **context,
            "summary": summary_counts(figures),
            "figures": figures,
            "not_judged": [
                {
                    "figure": n,
                    "what": plan.NOT_JUDGED[n][0],
                    "command": plan.NOT_JUDGED[n][1],
                    "why": plan.NOT_JUDGED_WHY,
                }
                for n in not_judged
            ],
        }
    )


def host_text(entry: dict) -> str:
    """This host's number in one line: value, interval, n."""
    if entry["verdict"] == rules.NOT_MEASURABLE:
        return "–"
    value = entry.get("value")
    interval = (
        f" [95 % CI {fmt(entry['ci_low'])}–{fmt(entry['ci_high'])}]"
        if entry.get("ci_low") is not None and entry.get("ci_high") is not None
        else " [no CI]"
    )
    label = f"{entry.get('label')}: " if entry.get("label") else ""
    return f"{label}{fmt(value)}{entry.get('unit') or ''}{interval}, n = {fmt(entry.get('n'))}"


def context_section(doc: dict) -> list[tuple[str, str]]:
    """The run's context, a row each: the paper, the profile and its time, the platform, the host."""
    host = doc.get("host") or {}
    isolation = doc.get("isolation") or {}
    commit = doc["generated_by"].get("git_commit")
    return [
        ("paper", doc["paper"]),
        (
            "profile",
            f"{doc.get('profile')} (expected {plan.clock_text(doc.get('expected_s') or 0)}, "
            f"took {plan.clock_text(doc.get('wall_s') or 0)})",
        ),
        ("platform", str(doc.get("platform"))),
        ("isolation", f"{isolation.get('chosen')}: {isolation.get('why')}"),
        ("host CPU", f"{host.get('cpu_model')}, {host.get('logical_cpus')} logical CPUs"),
        ("load average (1 min)", f"{fmt(host.get('load_start'))} at the start, {fmt(host.get('load_end'))} at the end"),
        ("faasprof", f"{doc['generated_by']['faasprof']}" + (f" (commit {str(commit)[:12]})" if commit else "")),
        ("created (UTC)", str(doc.get("created_utc"))),
    ]


@dataclass(frozen=True)
class Summary:
    """The verdicts counted, and a row per figure coloured by its verdict."""

    counts: str
    table: Table


def summary_section(doc: dict) -> Summary:
    rows: list[list[Any]] = [
        [
            f"Fig {e['figure']}",
            e["title"],
            f"{e['finding']} ({e['paper_value']})",
            host_text(e),
            e["verdict"],
            e.get("platform") or "–",
        ]
        for e in doc["figures"]
    ]
    return Summary(
        ", ".join(f"{n} {v}" for v, n in doc["summary"].items()),
        Table(
            ["figure", "title", "the paper", "this host", "verdict", "platform"],
            rows,
            left=6,
            row_classes=[VERDICT_CLASS[e["verdict"]] for e in doc["figures"]],
        ),
    )


def _details_table(details: list[dict]) -> Table | None:
    if not details:
        return None
    columns = [
        c
        for c in dict.fromkeys(k for d in details for k in d)
        if not c.endswith("_calls") and c not in ("instance", "window_s")
    ]
    return Table(columns, [[_cell(d.get(c)) for c in columns] for d in details], left=1)


def _cell(value: Any) -> Any:
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value)
    return value


@dataclass(frozen=True)
class Beside:
    """The same figure measured on a second platform, labelled with it."""

    platform: str
    verdict: str
    reason: str
    details: Table | None


@dataclass(frozen=True)
class FigureSection:
    """One figure: the verdict and its reason, the paper beside this host, what it needs, its
    details, the plots, the run directories (each with the command that re-analyses it), quotes."""

    figure: str
    title: str
    verdict: str
    verdict_class: str
    reason: str
    table: Table
    needs: list[str]
    capacity: dict | None
    details: Table | None
    beside: Beside | None
    plots: list[Image]
    runs: list[tuple[str, str]]
    quotes: list[tuple[int, str]]


def figure_section(entry: dict, out: Path) -> FigureSection:
    beside = entry.get("beside")
    run_dirs = entry.get("run_dirs") or []
    commands = entry.get("commands") or analyze_commands(run_dirs, out)
    return FigureSection(
        figure=entry["figure"],
        title=entry["title"],
        verdict=entry["verdict"],
        verdict_class=VERDICT_CLASS[entry["verdict"]],
        reason=entry["reason"],
        table=Table(
            ["", f"Fig {entry['figure']}"],
            [
                ["the paper", f"{entry['finding']} ({entry['paper_value']})"],
                ["this host", host_text(entry)],
                ["rule", entry["rule"]],
                ["platform", entry.get("platform") or "–"],
            ],
            left=2,
        ),
        needs=list(entry.get("needs") or []) if entry["verdict"] == rules.NOT_MEASURABLE else [],
        capacity=entry.get("capacity"),
        details=_details_table(entry.get("details") or []),
        beside=Beside(
            beside["platform"], beside["verdict"], beside["reason"], _details_table(beside.get("details") or [])
        )
        if beside
        else None,
        plots=[embedded_image(out / plot, plot) for plot in entry.get("plots") or []],
        runs=list(zip(run_dirs, commands)),
        quotes=[(quote["item"], quote["text"]) for quote in entry.get("localwhisk_vs_openwhisk") or []],
    )


def write_report(doc: dict, out: Path) -> Path:
    """``report.html`` (templates/reproduce.html): context, the summary table, one section per
    figure, the figures not judged."""
    page = render(
        "reproduce.html",
        title="faasprof reproduce",
        name=out.name,
        context=context_section(doc),
        summary=summary_section(doc),
        figures=[figure_section(entry, out) for entry in doc["figures"]],
        not_judged=list(doc.get("not_judged") or []),
    )
    path = out / plan.REPORT_HTML
    path.write_text(page, encoding="utf-8")
    return path


def write_json(doc: dict, out: Path) -> Path:
    path = out / plan.RESULT_JSON
    rundir.write_json_atomic(path, doc)
    return path
