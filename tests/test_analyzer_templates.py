"""The analyzer's pages are rendered from templates with autoescape: a value that holds markup (a
test name, a warning, a swept parameter) is shown as text, never run by the browser."""

from __future__ import annotations

import pandas as pd
from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import analyze_run
from faasprof.analyzer.compare_plots import write_compare_report

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
