"""faasprof's pages are rendered from templates with autoescape: a value that holds markup (a
test name, a warning, a swept parameter, a function's name in a sweep or in reproduce's figures)
is shown as text, never run by the browser."""

from __future__ import annotations

import pandas as pd
from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import analyze_run, load_run
from faasprof.analyzer.analysis import load_summary
from faasprof.analyzer.compare_plots import write_compare_report
from faasprof.analyzer.report import write_report
from faasprof.experiments import reproduce_report
from faasprof.experiments.reproduce_rules import NOT_MEASURABLE, REPRODUCED
from faasprof.experiments.sweep_report import write_html

SCRIPT = "<script>alert('x')</script>"
ESCAPED = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
ONE = {"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}}


def test_a_test_name_with_a_script_tag_is_text_in_the_run_report(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=1.0, instances=ONE, test_name=SCRIPT)
    analyze_run(run_dir, plots=False)
    page = (run_dir / "analysis" / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page
    assert f"<title>faasprof: {ESCAPED}</title>" in page
    assert f"<td class='l'>{ESCAPED}</td>" in page  # the outcomes table's test column


def sections_naming(text: str) -> dict:
    """The tails, chains, trace-fidelity and hosts sections of a summary, ``text`` in every name."""
    hop = {"hop": 0, "n": 1, "transfer_ms_p50": 1.0, "transfer_ms_p99": 2.0, "bandwidth_mbps_p50": 3.0}
    stats = {"p50_ms": 1.0, "p99_ms": 2.0, "p99_9_ms": 3.0, "p99_over_p50": 2.0, "p99_9_over_p50": 3.0}
    remote = {
        "status": "lost",
        "lost_reason": text,
        "lost_at_s": 1.0,
        "clock": {"method": text},
        "skipped": {"rdt": text},
        "kernel": text,
        "cpu_model": None,
        "cpus": 2,
        "collectors": [text],
    }
    return {
        "tail_ratios": {
            "rule": text,
            "rows": [{"instance": text, "function": "fn", "phase": 0, "start_class": "warm", "n": 5, **stats}],
        },
        "chains": {
            "groups": [
                {
                    "instance": text,
                    "mode": "inline",
                    "payload_bytes": 1,
                    "chain_length": 3,
                    "chains": 1,
                    "complete": 1,
                    "chain_ms_p50": 1.0,
                    "chain_ms_p99": 2.0,
                    "client_latency_ms_p50": 1.0,
                    "hops": [{**hop, "warm_n": 0, "warm_transfer_ms_p50": None, "warm_bandwidth_mbps_p50": None}],
                }
            ]
        },
        "trace_fidelity": {
            "warmup_s": 60,
            "spread": text,
            "total": {
                "sent": 10,
                "trace": 10,
                "exact": True,
                "within_minute": {},
                "cold_share": 0.1,
                "duration_ks_median": 0.2,
                "mapping_error_median_abs": 0.0,
            },
            "sample_distance": {text: {"wasserstein_log10": 0.1, "ks_statistic": 0.2}},
            "calibration": {"platform": text, "host": text, "run_platform": text, "run_host": text, "warning": text},
            "functions": [
                {
                    "instance": text,
                    "mapped_to": "spin",
                    "sent": 1,
                    "trace": 1,
                    "exact": True,
                    "duration": {},
                    "memory_mb": 128,
                    "app_memory_mb": 100,
                    "cold_share": 0.0,
                    "mapping_error": 0.0,
                }
            ],
        },
        "hosts": {
            "local": text,
            "remote": {text: remote},
            "activations": {"host": text, "basis": text, "attributed": {text: 1}, "unknown": {text: 1}},
        },
    }


def test_names_with_a_script_tag_are_text_in_the_tails_chains_fidelity_and_hosts_sections(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=1.0, instances=ONE)
    analyze_run(run_dir, plots=False)
    summary = {**load_summary(run_dir), **sections_naming(SCRIPT)}
    path = tmp_path / "report.html"
    write_report(load_run(run_dir), summary, path)
    page = path.read_text(encoding="utf-8")
    assert "<script" not in page
    for section in ("<h2>Tail-to-median ratio", "<h2>Function chains", "<h2>Trace fidelity", "<h2>Hosts"):
        assert ESCAPED in page.split(section, 1)[1].split("<h2>", 1)[0], section
    assert f"follow <code>{ESCAPED}</code>. Cold starts: 10 % of the successful calls" in page
    assert f"<p>Activations by host: {ESCAPED} 1; unknown 1 ({ESCAPED} 1).</p>" in page
    assert f"<p>Mapped with the calibration measured on {ESCAPED} of host {ESCAPED}" in page
    assert f'<p class="warn">{ESCAPED}</p>' in page


def test_a_warning_and_a_parameter_with_a_script_tag_are_text_in_the_compare_report(tmp_path):
    result = {
        "runs": ["a", "b"],
        "parameter": SCRIPT,
        "differing_keys": ["rate", SCRIPT],
        "warnings": [f"b: {SCRIPT}"],
    }
    path = tmp_path / "report.html"
    write_compare_report(path, pd.DataFrame(), result)
    page = path.read_text(encoding="utf-8")
    assert "<script" not in page
    assert f"<p>Parameter: <code>{ESCAPED}</code>. Settings that differ: rate, {ESCAPED}.</p>" in page
    assert f"<li>b: {ESCAPED}</li>" in page


def test_names_with_a_script_tag_are_text_in_the_sweep_report(tmp_path):
    """A hostile function name, instance, parameter or mode of a sweep: text on its page."""
    path = tmp_path / "report.html"
    capacity = [
        {
            "instance": SCRIPT,
            "phase": 0,
            "function": SCRIPT,
            "capacity_is_lower_bound": True,
            "capacity_rps": 12.0,
            SCRIPT: SCRIPT,
        }
    ]
    rows = [
        {
            "instance": SCRIPT,
            "phase": 0,
            "function": SCRIPT,
            "sweep_rate": 10.0,
            f"sweep_{SCRIPT}": SCRIPT,
            "completion_latency_ms_p50": {"mean": 12.5, "std": 1.0, "n": 3},
            "modes": [SCRIPT],
        }
    ]
    write_html(path, tmp_path, ["rate", SCRIPT], rows, capacity, [])
    page = path.read_text(encoding="utf-8")
    assert "<script" not in page
    assert f"<p>Parameters: rate, {ESCAPED}." in page
    assert f"<td class='l'>{ESCAPED}</td>" in page  # the capacity table's instance
    assert f"<td class=''>{ESCAPED}</td>" in page  # a swept value, a mode
    assert "<td class=''>≥ 12/s</td>" in page and "12.5 ms ± 1 ms (3)" in page


def _figure(key: str) -> dict:
    """A figure of reproduce.json whose every text field holds a script tag."""
    return {
        "figure": key,
        "title": SCRIPT,
        "finding": SCRIPT,
        "paper_value": SCRIPT,
        "rule": SCRIPT,
        "needs": [SCRIPT],
        "verdict": NOT_MEASURABLE if key == "6" else REPRODUCED,
        "reason": SCRIPT,
        "value": 2.5,
        "unit": "x",
        "label": SCRIPT,
        "ci_low": 2.0,
        "ci_high": 3.0,
        "n": 10,
        "platform": SCRIPT,
        "capacity": {"capacity_rps": 50.0, "source": SCRIPT},
        "details": [{"function": SCRIPT, "modes": [SCRIPT, "balanced"], "p50_ms": 1.5}],
        "beside": {"platform": SCRIPT, "verdict": SCRIPT, "reason": SCRIPT, "details": [{"function": SCRIPT}]},
        "plots": [],
        "run_dirs": [SCRIPT],
        "commands": [f"faasprof analyze {SCRIPT}"],
        "localwhisk_vs_openwhisk": [{"item": 3, "text": SCRIPT}],
    }


def test_names_with_a_script_tag_are_text_in_the_reproduce_report(tmp_path):
    """A hostile title, function, platform or run directory of reproduce.json: text on its page,
    escaped once (a list in a details cell was escaped twice: ``&amp;lt;script&amp;gt;``)."""
    doc = {
        "paper": SCRIPT,
        "profile": "quick",
        "expected_s": 60,
        "wall_s": 61,
        "platform": SCRIPT,
        "isolation": {"chosen": "process", "why": SCRIPT},
        "host": {"cpu_model": SCRIPT, "logical_cpus": 2, "load_start": 1.0, "load_end": 2.0},
        "generated_by": {"faasprof": "1.0", "git_commit": "0123456789abcdef"},
        "created_utc": SCRIPT,
        "summary": {REPRODUCED: 1, NOT_MEASURABLE: 1},
        "figures": [_figure("4"), _figure("6")],
        "not_judged": [{"figure": 9, "what": SCRIPT, "command": SCRIPT, "why": SCRIPT}],
    }
    page = reproduce_report.write_report(doc, tmp_path).read_text(encoding="utf-8")
    assert "<script" not in page and "&amp;lt;" not in page
    assert f"<h2 id='fig4'>Fig 4: {ESCAPED}: {REPRODUCED}</h2>" in page
    assert f"<td class=''>{ESCAPED}, balanced</td>" in page  # a list in a details cell
    assert f"<p>Hardware it needs: {ESCAPED}.</p>" in page  # the figure not measurable only
    assert page.count("Hardware it needs") == 1
    assert f"<li><a href='{ESCAPED}'>{ESCAPED}</a> (<code>faasprof analyze {ESCAPED}</code>)</li>" in page
    assert f"item 3: {ESCAPED}</blockquote>" in page
    assert f"<li>Fig 9 ({ESCAPED}): {ESCAPED}: <code>{ESCAPED}</code></li>" in page
    assert f"<tr class='mode-balanced'><td class='l'>Fig 4</td><td class='l'>{ESCAPED}</td>" in page
