"""Results a researcher reads right: the report's wording and units, self-describing frames and
Parquet files, several runs read together as one dataset."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
from test_analyzer_synthetic import write_synthetic_run

from faasprof.analyzer import frames as frames_mod
from faasprof.analyzer import markup
from faasprof.analyzer import plots as plots_mod
from faasprof.analyzer import report as report_mod
from faasprof.analyzer.analysis import analyze_run, load_run

MIXED = {
    "blocking": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "blocking": True},
    "async": {"application": "fn", "distribution": "Uniform", "rate": 20.0, "blocking": False},
}


def test_formatters_carry_units_and_never_exponents():
    assert report_mod.ms(0.71) == "0.71 ms"
    assert report_mod.ms(41.23) == "41.2 ms"
    assert report_mod.ms(10650.0) == "10.7 s"
    assert report_mod.ms(None) == "–"
    assert report_mod.pct(0.125) == "12.5 %"
    assert report_mod.fmt(10650.0) == "10,650"
    assert "e+" not in report_mod.fmt(39770.0)
    # Large rates, ratios and durations stay plain numbers (a 20,000/s workload read "2e+04/s").
    assert report_mod.rate(20000.0) == "20,000/s" and report_mod.rate(4.5) == "4.5/s"
    assert markup.ratio(1480.0) == "×1,480" and markup.ratio(0.893) == "×0.893"
    assert report_mod.seconds(3600.0) == "3,600 s"


def test_phases_name_their_latency_and_client_latency_is_blocking_only(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=6.0, instances=MIXED)
    summary = analyze_run(run_dir, plots=True)
    for instance in summary["instances"]:
        for phase in instance["phases"]:
            assert phase["latency_kind"].startswith("completion")
            if phase["blocking"]:
                assert phase["client_latency_kind"].startswith("client")
            else:
                assert phase["client_latency_kind"] is None
    assert "achieved_rule" in summary
    page = (run_dir / "analysis" / "report.html").read_text()
    assert not re.search(r"\d\.\d+e[+-]\d", page), "a number in exponent notation"
    assert (
        "client latency (blocking calls" in page and "completion latency (n: successful)" in page
    )  # one blocking instance
    assert "<details class='warn'>" in page or not summary["warnings"]
    assert "faasprof" in page and "seed" in page  # the run-context header


def _table_after(page: str, heading: str) -> str:
    start = page.index(heading)
    return page[page.index("<table>", start) : page.index("</table>", start)]


def test_modes_and_tail_tables_name_their_latency_and_n_and_fit_the_page(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=6.0, instances=MIXED)
    summary = analyze_run(run_dir, plots=False)
    page = (run_dir / "analysis" / "report.html").read_text()
    modes = _table_after(page, "<h2>Latency modes")
    groups, columns = modes.split("</tr>")[:2]
    assert "completion latency (n: successful)" in groups and "client latency (blocking calls" in groups
    assert re.findall(r"<th[^>]*>([^<]*)</th>", columns).count("n") == 2  # one n per latency
    # With 14 to 16 columns the table was at least 1,161 px wide at its narrowest (DejaVu Sans at
    # .85em), past the page's 1,100; 12 to 15 short columns under group headers take 850–990 px.
    assert len(re.findall(r"<th", columns)) <= 15
    assert "Non-blocking calls: async." in page and "Blocking calls: blocking." in page
    tails = _table_after(page, "<h2>Tail-to-median ratio")
    assert "<th class='l'>latency</th><th class=''>n</th>" in tails
    # fn's two instances, one of each call: two latencies, each its own rows (never pooled)
    assert "client (send → answer)</td>" in tails and "wait + duration</td>" in tails
    assert {(row["instance"], row["latency"]) for row in summary["tail_ratios"]["rows"]} == {
        ("blocking", "client (send → answer)"),
        ("async", "wait + duration"),
    }
    assert "Not the modes table's figures" in page


def test_web_calls_with_a_data_file_are_answered_at_the_end():
    assert frames_mod.answers_at_end({"blocking": False, "data_file": "x.png", "data_mode": "web"})
    assert not frames_mod.answers_at_end({"blocking": False, "data_file": "x.png", "data_mode": "base64"})
    assert not frames_mod.answers_at_end({"blocking": False})
    # A generic endpoint answers when its function is done, whatever "blocking" says.
    assert frames_mod.answers_at_end({"blocking": False, "endpoint": "generic"})
    assert not frames_mod.answers_at_end({"blocking": False, "endpoint": "openwhisk"})


def test_frames_have_time_types_attrs_and_the_same_dtypes(tmp_path):
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=6.0, instances=MIXED)
    run = load_run(run_dir)
    frame = run.invocations
    assert pd.api.types.is_timedelta64_dtype(frame["intended"])
    assert isinstance(frame["intended_utc"].dtype, pd.DatetimeTZDtype)
    per_second = frame.set_index("intended_utc").resample("1s")["completion_latency_ms"].median()
    assert 5 <= len(per_second) <= 8
    for table in (frame, run.phase_stats, run.function_stats):
        assert table.attrs["run"] == run_dir.name and table.attrs["test_name"] == run.test_name
    assert frame["function"].dtype == run.phase_stats["function"].dtype == run.function_stats["function"].dtype
    assert frame["phase"].dtype == run.phase_stats["phase"].dtype
    assert run.phase_stats["mode"].cat.ordered and frame["start_class"].cat.ordered
    text = repr(run)
    assert text.startswith("<Run ") and len(text) < 400
    long = run.phase_stats_long()
    assert {"instance", "phase", "metric", "value", "unit"} <= set(long.columns)
    row = long[(long["metric"] == "completion_latency_ms_p50")]
    assert len(row) == len(run.phase_stats) and set(row["unit"]) == {"ms"}


def test_parquet_files_describe_themselves_and_read_together(tmp_path):
    dirs = []
    for k, rate in enumerate((10.0, 30.0)):
        run_dir, _ = write_synthetic_run(
            tmp_path / f"r{k}",
            test_name=f"rate{k}",
            duration_s=4.0,
            instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": rate}},
        )
        analyze_run(run_dir, plots=False)
        dirs.append(run_dir)
    files = [d / "analysis" / "invocations.parquet" for d in dirs]
    described = frames_mod.parquet_description(files[0])
    assert described["run"] == dirs[0].name and described["kind"] == "invocations"
    assert described["parquet_format_version"] == frames_mod.PARQUET_FORMAT_VERSION
    assert described["units"]["completion_latency_ms"] == "ms"
    dataset = ds.dataset([str(f) for f in files], format="parquet")
    schema = dataset.schema
    assert str(schema.field("intended").type).startswith("duration")
    assert str(schema.field("intended_utc").type).startswith("timestamp")
    table = dataset.to_table().to_pandas()
    counts = table.groupby(table["run"].astype(str)).size()
    single = [len(pd.read_parquet(f)) for f in files]
    assert counts[dirs[0].name] == single[0] and counts[dirs[1].name] == single[1]
    assert single[1] > 2 * single[0]
    summary = json.loads((dirs[0] / "analysis" / "summary.json").read_text())
    assert summary["instances"][0]["phases"][0]["latency_kind"].startswith("completion")


def test_monitor_panels_plot_measurements_not_bookkeeping(tmp_path):
    perf = pd.DataFrame(
        {
            "t_s": [1.0, 2.0],
            "time_s": [1.0, 2.0],
            "interval_s": [1.0, 1.0],
            "elapsed_s": [1.0, 2.0],
            "cpu_utilization": [2.0, 2.0],
            "ipc": [1.1, 1.2],
            "llc_mpki": [3.0, np.nan],
            "page_faults_per_s": [10.0, 12.0],
            "branch_mpki": [np.nan, np.nan],
        }
    )
    columns, notes = plots_mod.plottable_columns("perf", perf)
    assert columns[:2] == ["ipc", "llc_mpki"] and "page_faults_per_s" in columns
    assert not {"t_s", "time_s", "interval_s", "elapsed_s", "cpu_utilization", "branch_mpki"} & set(columns)
    assert any("cpu_utilization" in n for n in notes) and any("branch_mpki" in n for n in notes)
    cgroups = pd.DataFrame(
        {
            "t_s": [1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
            "elapsed_s": [1.0] * 3 + [2.0] * 3,
            "interval_s": [1.0] * 6,
            "sandbox": [".", "a", "b"] * 2,
            "cpu_cores": [0.9, 0.6, 0.3, 1.0, 0.5, 0.5],
            "memory_usage_bytes": [3 * 2**20, 2**20, 2 * 2**20] * 2,
            "frozen": [0, 0, 1] * 2,
        }
    )
    columns, _ = plots_mod.plottable_columns("cgroups", cgroups)
    assert columns == ["cpu_cores", "memory_usage_bytes"]
    run_dir, _ = write_synthetic_run(
        tmp_path, duration_s=3.0, instances={"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}}
    )
    run = load_run(run_dir)
    run.monitors = {"perf": perf, "cgroups": cgroups}
    panels = plots_mod._monitor_series(run)
    labels = [label for label, _ in panels]
    assert "cgroups: busy CPUs (idle excluded)" in labels and "cgroups: memory (MiB)" in labels
    cpu = dict((label, lines) for label, lines in panels)["cgroups: busy CPUs (idle excluded)"]
    assert [name for name, _, _ in cpu] == ["all sandboxes", "a", "b"]
    assert plots_mod.monitors(run, tmp_path / "m.png") and (tmp_path / "m.png").stat().st_size > 1000
