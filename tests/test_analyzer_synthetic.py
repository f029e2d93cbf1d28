"""Synthetic run directories for the analyzer's tests and benchmark, and checks of the generator.

``write_synthetic_run`` writes a run directory through ``faasprof.rundir`` (manifest, invocation
log) plus activation records shaped exactly like OpenWhisk's extended JSON (faasprof/localwhisk/README.md,
"Records": ``start``/``end`` epoch ms, ``duration`` including ``initTime``, annotations ``path``,
``waitTime``, ``kind``, ``timeout``, ``limits`` and ``initTime`` only on cold starts).

The platform is a small queue model per function, so latency modes are known by construction:
one container per function serving FIFO (``service_ms`` each); the first activation is cold
(creation in ``waitTime``, ``initTime``); a container idle for at least ``pause_grace_ms`` is paused
and the next activation pays ``resume_ms`` inside ``waitTime``. Low rates are therefore
under-invoked, rates below 1000/service_ms balanced, rates above it over-invoked.
"""

from __future__ import annotations

import json

import numpy as np

from faasprof import rundir

WALL_ZERO_NS = 1_790_000_000_000_000_000  # 2026-09 in epoch ns


def _ids(rng: np.random.Generator, n: int) -> list[str]:
    raw = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64)
    return [f"{a:016x}{b:016x}" for a, b in raw]


# How OpenWhisk records each failed final outcome: (response.status, error text, timeout annotation).
FAILURE_RECORDS = {
    "application_error": ("application error", "boom", False),
    "developer_error": ("action developer error", "The action did not return a dictionary.", False),
    "internal_error": (
        "whisk internal error",
        "Failed to run container with image 'openwhisk/action-python-v3.11'.",
        False,
    ),
    "action_timeout": ("action developer error", "The action exceeded its time limits of 100 milliseconds.", True),
}


def record(
    activation_id,
    function,
    start_ms,
    wait_ms,
    init_ms,
    exec_ms,
    memory_mb=256,
    status="success",
    namespace="guest",
    error="boom",
    timed_out=False,
):
    """One activation record as OpenWhisk's API returns it (extended JSON)."""
    duration = int(round(init_ms + exec_ms))
    annotations = [
        {"key": "path", "value": f"{namespace}/{function}"},
        {"key": "waitTime", "value": int(round(wait_ms))},
        {"key": "kind", "value": "python:3.11"},
        {"key": "timeout", "value": timed_out},
        {"key": "limits", "value": {"concurrency": 1, "logs": 10, "memory": memory_mb, "timeout": 60000}},
    ]
    if init_ms:
        annotations.append({"key": "initTime", "value": int(round(init_ms))})
    return {
        "activationId": activation_id,
        "annotations": annotations,
        "duration": duration,
        "end": int(start_ms) + duration,
        "logs": [],
        "name": function,
        "namespace": namespace,
        "publish": False,
        "response": {
            "result": {"ok": True} if status == "success" else {"error": error},
            "size": 11,
            "status": status,
            "success": status == "success",
        },
        "start": int(start_ms),
        "subject": namespace,
        "version": "0.0.1",
    }


def synthetic_plan(instances: dict, duration_s: float, rng: np.random.Generator) -> list[tuple[float, str, str]]:
    """(planned time in s, instance, function) of every invocation, in time order: evenly spaced
    at each instance's rate, or Poisson arrivals, inside its activity window."""
    plan = []
    for name, spec in instances.items():
        start, end = spec.get("activity_window") or (0.0, duration_s)
        step = 1.0 / spec["rate"]
        if spec.get("distribution") == "Poisson":
            gaps = rng.exponential(step, size=int(spec["rate"] * (end - start) * 1.5) + 10)
            times = start + np.cumsum(gaps)
        else:
            times = np.arange(start + step / 2, end, step)
        times = times[times < end]
        plan.extend((float(t), name, spec["application"]) for t in times)
    plan.sort()
    return plan


def write_synthetic_run(
    out_dir,
    *,
    test_name="synthetic",
    duration_s=10.0,
    instances=None,
    service_ms=5.0,
    pause_grace_ms=50.0,
    resume_ms=8.0,
    cold_wait_ms=300.0,
    init_ms=120.0,
    lateness_ms=0.2,
    missing_every=0,
    interrupt_at_s=None,
    save_records=True,
    seed=1,
    format_version=None,
    blocking=True,
    failures=None,
    accept_ms=0.5,
    blocking_wait_ms=None,
):
    """Write a run directory; returns (run_dir, list of all records the platform would hold).

    ``failures`` maps seq to a failed final outcome (a ``FAILURE_RECORDS`` key, or ``no_record``:
    the platform never stores it); the HTTP side is what the invoker sees: a 202 for a
    non-blocking call, a 502 (``app_error``) for a blocking one. ``accept_ms``: from the send to
    the platform's acceptance (a non-blocking call's 202 comes 0.5 ms after it).
    ``blocking_wait_ms``: the platform's blocking wait (OpenWhisk's 60 s): a blocking call not done
    by then is answered 202 then, its function ending later.
    """
    failures = failures or {}
    instances = instances or {"i0": {"application": "fn", "distribution": "Uniform", "rate": 10.0}}
    rng = np.random.default_rng(seed)
    plan = synthetic_plan(instances, duration_s, rng)
    n = len(plan)
    intended = np.array([int(t * 1e9) for t, _, _ in plan], dtype=np.int64)
    ids = _ids(rng, n)
    free_at: dict[str, float] = {}  # ms on the run clock
    rows, records = [], []
    for seq in range(n):
        t_ns, instance, function = intended[seq], plan[seq][1], plan[seq][2]
        if interrupt_at_s is not None and t_ns >= interrupt_at_s * 1e9:
            rows.append(
                (seq, instance, function, int(t_ns), None, None, "not_sent", None, None, "interrupted before sending")
            )
            continue
        sent_ms = t_ns / 1e6 + lateness_ms
        accepted_ms = sent_ms + accept_ms
        if function not in free_at:
            (
                ready_ms,
                init,
            ) = accepted_ms + cold_wait_ms, init_ms
        else:
            idle = accepted_ms - free_at[function]
            if idle >= pause_grace_ms:
                ready_ms, init = accepted_ms + resume_ms, 0.0
            else:
                ready_ms, init = max(accepted_ms, free_at[function]) + 0.3, 0.0
        exec_ms = service_ms * (1.0 + 0.1 * rng.random())
        end_ms = ready_ms + init + exec_ms
        free_at[function] = end_ms
        answers_at_end = instances[instance].get("blocking", blocking)  # an instance's own call kind over the run's
        done_ms = end_ms + 1.0 if answers_at_end else accepted_ms + 0.5  # non-blocking: a 202 on acceptance
        capped = answers_at_end and blocking_wait_ms is not None and done_ms - sent_ms > blocking_wait_ms
        if capped:
            done_ms = sent_ms + blocking_wait_ms
        start_wall_ms = (WALL_ZERO_NS / 1e6) + ready_ms
        failure = failures.get(seq)
        if failure in FAILURE_RECORDS:
            status, error, timed_out = FAILURE_RECORDS[failure]
            records.append(
                record(
                    ids[seq],
                    function,
                    int(start_wall_ms),
                    ready_ms - accepted_ms,
                    init,
                    exec_ms,
                    status=status,
                    error=error,
                    timed_out=timed_out,
                )
            )
        elif failure is None:
            records.append(record(ids[seq], function, int(start_wall_ms), ready_ms - accepted_ms, init, exec_ms))
        elif failure != "no_record":
            raise ValueError(f"failures[{seq}] = {failure!r}: not a failed record outcome")
        if failure in FAILURE_RECORDS and answers_at_end:
            rows.append(
                (
                    seq,
                    instance,
                    function,
                    int(t_ns),
                    int(sent_ms * 1e6),
                    int(done_ms * 1e6),
                    "app_error",
                    502,
                    ids[seq],
                    "HTTP 502",
                )
            )
        else:
            rows.append(
                (
                    seq,
                    instance,
                    function,
                    int(t_ns),
                    int(sent_ms * 1e6),
                    int(done_ms * 1e6),
                    "ok",
                    200 if answers_at_end and not capped else 202,
                    ids[seq],
                    None,
                )
            )
    run_dir = rundir.create_run_dir(out_dir, test_name)
    workload = {
        "test_name": test_name,
        "test_duration_in_seconds": duration_s,
        "random_seed": seed,
        "blocking_cli": blocking,
        "instances": instances,
        "platform": {"localwhisk": {"pause_grace_ms": pause_grace_ms}},
    }
    manifest = rundir.new_manifest(test_name, workload, rundir.ClockAnchor(0, WALL_ZERO_NS))
    manifest.status = "interrupted" if interrupt_at_s is not None else "complete"
    manifest.platform = {"kind": "synthetic", "settings": {"pause_grace_ms": pause_grace_ms}}
    manifest.counts = {"planned": n, "sent": sum(1 for r in rows if r[6] != "not_sent"), "failed": 0}
    if format_version is not None:
        manifest.format_version = format_version
    rundir.write_manifest(run_dir, manifest)
    with open(run_dir / rundir.INVOCATIONS, "w", encoding="utf-8") as handle:
        handle.write(",".join(rundir.INVOCATION_COLUMNS) + "\n")
        for row in rows:
            handle.write(rundir.format_row(row))
    kept = [r for k, r in enumerate(records) if not (missing_every and k % missing_every == missing_every - 1)]
    if save_records:
        with open(run_dir / rundir.ACTIVATIONS, "w", encoding="utf-8") as handle:
            for r in kept:
                handle.write(json.dumps(r) + "\n")
    return run_dir, kept


def test_generator_writes_a_loadable_run(tmp_path):
    run_dir, records = write_synthetic_run(tmp_path, duration_s=2.0)
    assert rundir.read_manifest(run_dir).to_json()["status"] == "complete"
    rows = rundir.read_invocations(run_dir)
    assert len(rows) == 20 and len(records) == 20
    assert records[0]["annotations"][-1]["key"] == "initTime"  # the first activation is cold
    assert all(r["duration"] == r["end"] - r["start"] for r in records)
