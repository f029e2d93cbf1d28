"""Plug-ins from installed packages (``faasprof.plugins``): found through entry points, checked by
their registry, used by validate, and a broken one is one line that leaves the built-ins working.

"Installed" here is a package's ``.dist-info`` (its METADATA and entry_points.txt, what pip writes)
in a folder on the subprocess's PYTHONPATH, beside the example plug-in's source
(examples/faasprof-example-plugin): importlib.metadata finds it exactly as it finds a pip-installed
one, with no venv to build. tests/test_plugin_install.py installs the example with pip into a
fresh venv and runs it end to end (slow)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faasprof import plugins
from faasprof.analyzer import metrics, stats
from faasprof.commands import doctor as cmd_doctor
from faasprof.paths import WORKLOAD_CONFIGS_DIR
from faasprof.platforms import registry
from faasprof.platforms.generic import GenericPlatform
from faasprof.workload import messages
from tests.helpers import REPO_ROOT, run_cli
from tests.test_modes_boundaries import _rows

LISTING = WORKLOAD_CONFIGS_DIR / "paper_listing1.json"
EXAMPLE = REPO_ROOT / "examples" / "faasprof-example-plugin"
EXAMPLE_ENTRY_POINTS = {
    "faasprof.collectors": {"loadavg": "faasprof_example_plugin.loadavg:LoadavgCollector"},
    "faasprof.distributions": {"Sawtooth": "faasprof_example_plugin.sawtooth:Sawtooth"},
}


def fake_install(site: Path, package: str, version: str, entry_points: dict[str, dict[str, str]]) -> None:
    """What pip leaves in site-packages for ``package``, as far as importlib.metadata reads it."""
    info = site / f"{package.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    lines = []
    for group, points in entry_points.items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))


def plugin_env(site: Path) -> dict:
    path = os.pathsep.join([str(site), str(EXAMPLE), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {"PYTHONPATH": path, "FAASPROF_NO_PLUGINS": ""}


def sawtooth_workload(folder: Path, **instance) -> Path:
    data = {
        "test_name": "saw",
        "test_duration_in_seconds": 4,
        "instances": {
            "ramp": {
                "application": "json_dumps",
                "distribution": "Sawtooth",
                "sawtooth_low_rps": 1,
                "sawtooth_high_rps": 5,
                "sawtooth_period_s": 2,
                **instance,
            }
        },
        "monitoring": {"loadavg": {"interval_ms": 100}},
    }
    path = folder / "saw.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def example_installed(tmp_path) -> dict:
    fake_install(tmp_path / "site", "faasprof-example-plugin", "0.1.0", EXAMPLE_ENTRY_POINTS)
    return plugin_env(tmp_path / "site")


def test_the_example_plugin_is_listed_by_doctor_and_its_names_validate(tmp_path, example_installed):
    doctor = run_cli("doctor", env=example_installed)
    assert doctor.returncode == 0, doctor.stderr
    lines = doctor.stdout.splitlines()
    assert (
        "plugins   ok      collector 'loadavg' from faasprof-example-plugin 0.1.0 "
        "(faasprof_example_plugin.loadavg:LoadavgCollector)"
    ) in lines
    assert "plugins   ok      distribution 'Sawtooth' from faasprof-example-plugin 0.1.0 " in doctor.stdout
    assert "loadavg   ok      /proc/loadavg readable" in lines  # the plug-in collector's own doctor
    plan = run_cli("plan", sawtooth_workload(tmp_path), "--out", tmp_path / "s.csv", env=example_installed)
    assert plan.returncode == 0, plan.stderr
    # (1 + 5) / 2 invocations per second over 4 s: the sawtooth's integral.
    assert sum(1 for _ in (tmp_path / "s.csv").open()) - 1 == 12


def test_a_plugins_own_settings_are_checked_by_its_schema_and_its_checks(tmp_path, example_installed):
    for folder in "abc":
        (tmp_path / folder).mkdir()
    schema = sawtooth_workload(tmp_path / "a", sawtooth_period_s=-1)
    data = json.loads(schema.read_text())
    data["monitoring"] = {"loadavg": {"interval_ms": 5}}
    schema.write_text(json.dumps(data))
    own = sawtooth_workload(tmp_path / "b", sawtooth_low_rps=9)
    # Its keys belong to it: under Poisson they are refused, as a built-in distribution's are.
    other = sawtooth_workload(tmp_path / "c", distribution="Poisson", rate=1)
    done = run_cli("validate", "--offline", schema, own, other, env=example_installed)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{schema}: instances.ramp.sawtooth_period_s: must be a number > 0 (got -1)" in done.stderr
    assert f"{schema}: monitoring.loadavg.interval_ms: must be an integer >= 10 (got 5)" in done.stderr
    assert f"{own}: instances.ramp.sawtooth_low_rps: must not exceed sawtooth_high_rps (5)" in done.stderr
    assert f'{other}: instances.ramp.sawtooth_low_rps: only used with distribution "Sawtooth"' in done.stderr


def test_without_the_plugin_its_names_are_refused(tmp_path):
    done = run_cli("validate", "--offline", sawtooth_workload(tmp_path))
    assert done.returncode == 2
    assert "monitoring.loadavg" in done.stderr and "instances.ramp.distribution" in done.stderr


def test_broken_plugins_are_one_line_each_and_the_built_ins_keep_working(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "broken_plugin.py").write_text(
        "import faasprof_no_such_module\n"  # an import error
    )
    # A plug-in module imports the module of its base class, as the example does.
    (tmp_path / "site" / "odd_plugin.py").write_text(
        "from faasprof.monitoring.collectors.vmstat import VmstatCollector\n"
        "class Perf(VmstatCollector):\n    name = 'perf'\n"
        "class NotACollector:\n    name = 'nothing'\n"
    )
    (tmp_path / "site" / "odd_arrivals.py").write_text(
        "from faasprof.workload.arrivals import Poisson\nclass Named(Poisson):\n    name = 'Other'\n"
    )
    fake_install(
        tmp_path / "site",
        "broken-plugins",
        "2.0",
        {
            "faasprof.collectors": {
                "gone": "broken_plugin:Gone",
                "perf": "odd_plugin:Perf",
                "nothing": "odd_plugin:NotACollector",
            },
            "faasprof.distributions": {"Named": "odd_arrivals:Named"},
        },
    )
    env = plugin_env(tmp_path / "site")
    done = run_cli("validate", "--offline", LISTING, env=env)
    assert done.returncode == 0, done.stderr
    warnings = done.stderr.splitlines()
    assert "Traceback" not in done.stderr and len(warnings) == 4, done.stderr
    fix = "; fix or uninstall broken-plugins (FAASPROF_NO_PLUGINS=1 skips all plug-ins)"
    assert warnings == [
        "faasprof: warning: plug-in collector 'gone' (broken_plugin:Gone) of broken-plugins 2.0 not loaded: cannot be "
        "loaded (ModuleNotFoundError: No module named 'faasprof_no_such_module')" + fix,
        "faasprof: warning: plug-in collector 'nothing' (odd_plugin:NotACollector) of broken-plugins 2.0 not loaded: "
        "<class 'odd_plugin.NotACollector'> is not a subclass of faasprof.monitoring.collectors.base.Collector" + fix,
        "faasprof: warning: plug-in collector 'perf' (odd_plugin:Perf) of broken-plugins 2.0 not loaded: 'perf' is a "
        "built-in key of the monitoring block; give the plug-in another name" + fix,
        "faasprof: warning: plug-in distribution 'Named' (odd_arrivals:Named) of broken-plugins 2.0 not loaded: its name "
        "is 'Other'; set name = 'Named' (the entry point's name)" + fix,
    ]
    doctor = run_cli("doctor", env=env)
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr
    listed = [line for line in doctor.stdout.splitlines() if line.startswith("plugins")]
    assert len(listed) == 4 and all(line.startswith("plugins   warn    plug-in ") for line in listed)
    assert "perf " in doctor.stdout  # the built-in perf collector's own lines are still there
    skipped = run_cli("validate", "--offline", LISTING, env={**env, "FAASPROF_NO_PLUGINS": "1"})
    assert skipped.returncode == 0 and skipped.stderr == ""


def test_load_group_loads_once_and_keeps_what_its_registry_accepts(tmp_path, monkeypatch):
    (tmp_path / "one_plugin.py").write_text("VALUE = 3\nOTHER = 'x'\n")
    fake_install(tmp_path, "one", "1.0", {"faasprof.metrics": {"three": "one_plugin:VALUE", "x": "one_plugin:OTHER"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_LOADED", {})
    monkeypatch.setattr(plugins, "_FAILED", {})
    calls = []

    def accept(name, value):
        calls.append(name)
        return (value, None) if isinstance(value, int) else (None, "not a number")

    (three,) = plugins.load_group("faasprof.metrics", accept)
    assert (three.name, three.kind, three.package, three.version, three.value) == ("three", "metric", "one", "1.0", 3)
    assert [failure.reason for failure in plugins.failures()] == ["not a number"]
    assert plugins.load_group("faasprof.metrics", accept) == [three] and calls == ["three", "x"]


def test_doctor_says_when_no_plugin_is_installed(monkeypatch):
    monkeypatch.setattr(plugins, "_LOADED", {})
    monkeypatch.setattr(plugins, "_FAILED", {})
    (finding,) = cmd_doctor.check_plugins()
    assert finding.state == cmd_doctor.INFO and finding.text.startswith("no plug-ins installed (entry-point groups ")


def test_a_plugin_metric_is_a_column_with_its_unit_and_a_failing_one_is_nan_and_a_problem():
    good = metrics.Metric("doubled_ms", "twice the client latency", lambda frame: frame["client_latency_ms"] * 2)
    broken = metrics.Metric("broken_ms", "raises", lambda frame: frame["no_such_column"])
    short = metrics.Metric("short_ms", "one value", lambda frame: [1.0])
    frame = pd.DataFrame({"client_latency_ms": [1.0, 2.5]})
    columns, problems = metrics.metric_columns(frame, (good, broken, short))
    assert columns["doubled_ms"].tolist() == [2.0, 5.0]
    assert np.isnan(columns["broken_ms"]).all() and np.isnan(columns["short_ms"]).all()
    assert problems == [
        "metric broken_ms: not computed (KeyError: 'no_such_column'); its column is NaN",
        "metric short_ms: not computed (ValueError: 1 values for 2 invocations); its column is NaN",
    ]
    assert metrics.accept_plugin("doubled_ms", good) == (good, None)
    assert metrics.accept_plugin("doubled", metrics.Metric("doubled", "", len))[1] == (
        "'doubled' does not end in its unit (_ms, _s, _mb, _n, _over_...: faasprof.analyzer.units)"
    )
    assert (
        metrics.accept_plugin("other_ms", good)[1]
        == "its name is 'doubled_ms'; set name='other_ms' (the entry point's name)"
    )


def test_group_stats_gives_a_plugin_metric_its_percentiles(monkeypatch):
    metric = metrics.Metric("doubled_ms", "", lambda frame: frame["client_latency_ms"] * 2)
    monkeypatch.setattr(stats, "METRICS", (metric,))
    rows = _rows(3)  # the columns group_stats reads, one invocation each
    rows["successful"] = [True, True, False]
    rows["doubled_ms"] = [2.0, 6.0, 200.0]
    block = {key: value for key, value in stats.group_stats(rows, 0.0, 1.0).items() if key.startswith("doubled_ms")}
    assert block["doubled_ms_n"] == 2 and block["doubled_ms_max"] == 6.0  # successful work only


class ToyPlatform(GenericPlatform):
    """A plug-in platform as a package would declare it: its endpoint, one key and its schema."""

    endpoint = "toyfaas"
    instance_keys = ("gateway",)
    instance_key_schemas = {"gateway": {"type": "string", "minLength": 1, "description": "toyfaas: the gateway URL."}}


def test_a_plugin_platform_is_checked_and_its_endpoint_and_keys_join_the_schema(monkeypatch):
    assert registry.accept_plugin("toyfaas", ToyPlatform) == (ToyPlatform, None)
    assert registry.accept_plugin("toy", ToyPlatform)[1] == (
        "its endpoint is 'toyfaas'; set endpoint = 'toy' (the entry point's name)"
    )
    assert registry.accept_plugin("generic", GenericPlatform)[1] == (
        "endpoint 'generic' is a built-in platform's; give the plug-in another name"
    )
    keyless = type("Keyless", (ToyPlatform,), {"instance_key_schemas": {}})
    assert registry.accept_plugin("toyfaas", keyless)[1] == (
        "instance_key_schemas lacks gateway; give each instance key its JSON Schema"
    )
    monkeypatch.setattr(registry, "PLATFORMS", (*registry.PLATFORMS, ToyPlatform))
    messages.load_schema.cache_clear()
    try:
        schema = messages.load_schema()
        assert schema["properties"]["endpoint"]["enum"][-1] == "toyfaas"
        assert schema["$defs"]["instance"]["properties"]["gateway"] == ToyPlatform.instance_key_schemas["gateway"]
        assert "gateway" not in messages.file_schema()["$defs"]["instance"]["properties"]
    finally:
        monkeypatch.undo()
        messages.load_schema.cache_clear()
        messages._validator.cache_clear()
