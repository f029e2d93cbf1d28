"""Activations of a several-invoker OpenWhisk attributed to a host by the action containers each
host had (``monitors/<host>/containers/``): the parser on ``docker events``/``docker ps`` output
recorded here (``tests/data/monitoring/containers/``), and synthetic run directories (the
synthetic run's action ``guest/fn``, kind ``python:3.11``, about ten activations a second over
10 s) whose hosts had its containers on one host, on two in turn, or on two at once."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_analyzer_synthetic import WALL_ZERO_NS, write_synthetic_run

from faasprof import rundir
from faasprof.analyzer import attribution
from faasprof.analyzer.analysis import analyze_run, load_run
from faasprof.errors import FormatError
from faasprof.monitoring.parsers.containers import (
    action_key,
    container_spans,
    latest_event_ns,
    openwhisk_name,
    prewarm_key,
)
from tests.helpers import DATA_DIR

S = 1_000_000_000
RECORDED = DATA_DIR / "monitoring" / "containers"
OPENWHISK = {"kind": "openwhisk", "apihost": "https://10.0.0.10", "source": "flags"}


# -- the parser, on recorded output ------------------------------------------------------------------
def _recorded_spans():
    watch = json.loads((RECORDED / "watch.json").read_text())
    texts = [(RECORDED / name).read_text() for name in ("events.jsonl", "ps_start.jsonl", "ps_end.jsonl")]
    return watch, {
        span.name: span for span in container_spans(*texts, watch["wall_ns_at_start"], watch["wall_ns_at_end"])
    }


def test_recorded_docker_output_gives_each_containers_span():
    watch, spans = _recorded_spans()
    assert set(spans) == {"wsk0_1_guest_hello", "wsk0_2_prewarm_nodejs20", "wsk0_64_guest_json_dumps"}
    # Running before the watch (start snapshot): from its CreatedAt (whole seconds) to its destroy event.
    hello = spans["wsk0_1_guest_hello"]
    assert hello.begin_wall_ns == 1795744052 * S and hello.end_wall_ns == 1795744056212691859
    assert (hello.invoker, hello.key) == ("wsk0", "guest_hello")
    # Created and removed during the watch: its create and destroy events, to the nanosecond.
    prewarm = spans["wsk0_2_prewarm_nodejs20"]
    assert (prewarm.begin_wall_ns, prewarm.end_wall_ns) == (1795744053719916329, 1795744055076345241)
    assert prewarm.key == prewarm_key("nodejs:20")
    # Seen only in the end snapshot (its events filtered out of the recording): up to the watch's end.
    other = spans["wsk0_64_guest_json_dumps"]
    assert other.begin_wall_ns <= 1795744054 * S and other.end_wall_ns == watch["wall_ns_at_end"]
    assert latest_event_ns((RECORDED / "events.jsonl").read_text()) == 1795744056212691859


def test_container_names_follow_openwhisk():
    assert action_key("guest", "my-action.v2") == "guest_myactionv2"  # only letters, digits and _ kept
    assert action_key("user@example.com_dev", "fn") == "userexamplecom_dev_fn"
    assert openwhisk_name("wskinvoker1.a-b3_17_guest_fn") == ("wskinvoker1.a-b3", "guest_fn")
    assert openwhisk_name("/wsk0_2_prewarm_nodejs20") == ("wsk0", "prewarm_nodejs20")
    assert openwhisk_name("faasprof-host-h1") is None and openwhisk_name("wsk0_guest_fn") is None


def test_output_of_another_tool_is_refused_in_one_line():
    with pytest.raises(FormatError, match=r"not docker events .* line 1 is not JSON"):
        container_spans("CONTAINER ID   IMAGE\n", "", "", 0, 1)
    with pytest.raises(FormatError, match="lacks ID or Names"):
        container_spans("", '{"Image": "x"}\n', "", 0, 1)


# -- synthetic runs ------------------------------------------------------------------------------------
def _event(action: str, name: str, at_ns: int) -> str:
    attributes = {"image": "openwhisk/action-python-v3.11", "name": name}
    event = {"status": action, "id": f"id-{name}", "Type": "container", "Action": action}
    event.update(Actor={"ID": f"id-{name}", "Attributes": attributes}, time=at_ns // S, timeNano=at_ns)
    return json.dumps(event) + "\n"


def _host(run_dir, name: str, containers: dict[str, tuple[float, float]], watch=(-1.0, 12.0), offset_ns=0):
    """Host ``name`` (its clock ``offset_ns`` ahead) with ``containers``: {name: (create, destroy)
    in seconds of the run}; its watch from ``watch[0]`` to ``watch[1]`` (None: lost, no end)."""
    clock = {"offset_ns_start": offset_ns, "uncertainty_ns_start": 100_000, "offset_ns_end": offset_ns}
    info = {
        "address": f"10.0.0.{11 + len(name)}", "port": 22, "kernel": "6.1.0", "cpu_model": "x", "cpus": 4,
        "collectors": {"containers": {"name": "containers", "status": "stopped"}}, "skipped": {},
        "clock": {**clock, "uncertainty_ns_end": 100_000, "method": "ssh round trip midpoint, best of 5"},
        "status": "ok", "lost_reason": None, "lost_at_ns": None,
    }  # fmt: skip
    rundir.write_host_info(run_dir, name, info)
    directory = rundir.host_monitor_dir(run_dir, name, "containers")
    # The record times and Docker's are both read on the host's clock: the synthetic records
    # carry the run's clock, so the events do too, whatever the host's offset.
    events = "".join(
        _event(action, container, WALL_ZERO_NS + int(at_s * S))
        for container, (begin_s, end_s) in containers.items()
        for action, at_s in (("create", begin_s), ("start", begin_s + 0.2), ("die", end_s - 0.1), ("destroy", end_s))
    )
    (directory / "events.jsonl").write_text(events)
    (directory / "ps_start.jsonl").write_text("")
    (directory / "ps_end.jsonl").write_text("")
    end = None if watch[1] is None else WALL_ZERO_NS + int(watch[1] * S)
    meta = {"name": "containers", "wall_ns_at_start": WALL_ZERO_NS + int(watch[0] * S), "wall_ns_at_end": end}
    rundir.write_json_atomic(directory / "meta.json", meta)
    return info


def _run(tmp_path, hosts: dict[str, dict]) -> tuple:
    """The synthetic run on a several-invoker OpenWhisk whose hosts are ``hosts``: {name: _host's
    keywords}; its invocation frame."""
    run_dir, _ = write_synthetic_run(tmp_path, duration_s=10.0)
    manifest = rundir.read_manifest(run_dir)
    manifest.platform = dict(OPENWHISK)
    infos = {name: _host(run_dir, name, **spec) for name, spec in hosts.items()}
    manifest.update(hosts={name: rundir.manifest_entry(info) for name, info in infos.items()})
    rundir.write_manifest(run_dir, manifest)
    return run_dir, load_run(run_dir).invocations


def test_containers_on_one_host_attribute_every_activation_to_it(tmp_path):
    _, frame = _run(tmp_path, {"h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 11.0)}}, "h2": {"containers": {}}})
    ran = frame["has_record"]
    assert ran.sum() > 50 and (frame.loc[ran, "host"] == "h1").all()
    assert frame.attrs["host_attribution"] == {"attributed": {"h1": int(ran.sum()), "h2": 0}, "unknown": {}}


def test_disjoint_containers_on_two_hosts_attribute_each_activation_and_leave_the_switch_unknown(tmp_path):
    hosts = {
        "h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 5.0)}, "offset_ns": 2_500_000_000},
        "h2": {"containers": {"wsk1_1_guest_fn": (5.0, 11.0)}, "offset_ns": -750_000_000},
    }
    _, frame = _run(tmp_path, hosts)
    ran = frame["has_record"].to_numpy()
    start = frame["platform_start_s"].to_numpy()
    end = frame["platform_end_s"].to_numpy()
    host = frame["host"].astype(str).to_numpy()
    assert (host[ran & (end < 5.0)] == "h1").all() and (host[ran & (start > 5.0)] == "h2").all()
    across = ran & (start <= 5.0) & (end >= 5.0)  # running while one container went and the other came
    assert (host[across] == "unknown").all()
    counts = frame.attrs["host_attribution"]
    assert counts["attributed"] == {"h1": int((ran & (end < 5.0)).sum()), "h2": int((ran & (start > 5.0)).sum())}
    assert counts["unknown"] == ({"ambiguous": int(across.sum())} if across.any() else {})


def test_overlapping_containers_on_two_hosts_leave_every_activation_unknown(tmp_path):
    hosts = {
        "h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 11.0)}},
        "h2": {"containers": {"wsk1_4_guest_fn": (2.0, 8.0)}},
    }
    _, frame = _run(tmp_path, hosts)
    ran = frame["has_record"].to_numpy()
    start = frame["platform_start_s"].to_numpy()
    end = frame["platform_end_s"].to_numpy()
    host = frame["host"].astype(str).to_numpy()
    both = ran & (end >= 2.0) & (start <= 8.0)
    assert both.sum() > 30 and (host[both] == "unknown").all()
    assert (host[ran & ~both] == "h1").all()
    assert frame.attrs["host_attribution"]["unknown"] == {"ambiguous": int(both.sum())}


def test_a_prewarmed_container_of_the_kind_counts_and_one_of_another_kind_does_not(tmp_path):
    hosts = {
        "h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 11.0)}},
        "h2": {"containers": {"wsk1_1_prewarm_python311": (-0.5, 3.0), "wsk1_2_prewarm_nodejs20": (-0.5, 11.0)}},
    }
    _, frame = _run(tmp_path, hosts)
    ran = frame["has_record"].to_numpy()
    host = frame["host"].astype(str).to_numpy()
    start = frame["platform_start_s"].to_numpy()
    # OpenWhisk keeps a prewarmed container's name when it takes an action: it could have run there.
    assert (host[ran & (start <= 3.0)] == "unknown").all() and (host[ran & (start > 3.0)] == "h1").all()


def test_a_host_not_watched_over_an_activation_leaves_it_unknown(tmp_path):
    hosts = {"h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 11.0)}}, "h2": {"containers": {}, "watch": (-1.0, None)}}
    _, frame = _run(tmp_path, hosts)
    ran = frame["has_record"]
    # h2 lost with no event seen: watched up to its start only, it might have run any of them.
    assert (frame.loc[ran, "host"] == "unknown").all()
    assert frame.attrs["host_attribution"]["unknown"] == {"not watched": int(ran.sum())}


def test_rows_without_a_record_are_counted_apart():
    ran = np.array([True, True, False])
    keys = np.array(["guest_fn", None, None], dtype=object)
    watch = attribution.HostContainers("h1", [], 0, 10 * S)
    column, counts = attribution.attribute(
        ran, keys, keys.copy(), np.array([1.0, np.nan, np.nan]), np.array([2.0, np.nan, np.nan]), {"h1": watch}, 0
    )
    assert list(column.astype(str)) == ["unknown"] * 3
    assert counts == {"attributed": {"h1": 0}, "unknown": {"none seen": 1, "no record": 1}}


def test_the_summary_and_report_count_activations_per_host_and_why_unknown(tmp_path):
    hosts = {
        "h1": {"containers": {"wsk0_1_guest_fn": (-0.5, 11.0)}},
        "h2": {"containers": {"wsk1_4_guest_fn": (2.0, 8.0)}},
    }
    run_dir, frame = _run(tmp_path, hosts)
    summary = analyze_run(run_dir, plots=False)
    activations = summary["hosts"]["activations"]
    counts = frame.attrs["host_attribution"]
    assert activations["host"] == "by container" and activations["attributed"] == counts["attributed"]
    assert activations["unknown"] == counts["unknown"] and "ambiguous" in counts["unknown"]
    report = (run_dir / "analysis" / "report.html").read_text()
    n_h1, n_amb = counts["attributed"]["h1"], counts["unknown"]["ambiguous"]
    assert f"Activations by host: h1 {n_h1}, h2 0; unknown {n_amb} (ambiguous {n_amb})." in report
