"""Choosing the parameter of a comparison and the environment warnings, from manifests alone."""

from __future__ import annotations

from analyzer.compare import differing_keys, environment_warnings, pick_parameter


def _manifest(memory=256, rate=10.0, seed=1, port=4000, applied=None, kernel="6.1.0", grace=50):
    manifest = {
        "test_name": f"t{seed}",
        "workload": {
            "seed": seed,
            "duration_s": 10.0,
            "instances": {"i0": {"function": f"markdown-{memory}", "rate_per_s": rate, "memory_mb": memory, "window_s": [0, 10]}},
            "as_given": {"test_name": f"t{seed}", "instances": {"i0": {"application": f"markdown-{memory}", "rate": rate}}},
        },
        "platform": {"kind": "localwhisk", "apihost": f"http://127.0.0.1:{port}", "localwhisk": {"pause_grace_ms": grace, "data_dir": f"/tmp/lw{port}"}},
        "host": {"hostname": "box", "kernel": kernel, "cpu_model": "Xeon"},
        "faasprof": {"version": "0.1.0"},
    }
    if applied is not None:
        manifest["sweep_point"] = {"values": dict(applied), "applied": dict(applied)}
    return manifest


def test_volatile_settings_are_not_parameters():
    runs = [_manifest(seed=1, port=4000), _manifest(seed=2, port=5000)]
    assert differing_keys(runs) == []
    assert pick_parameter(runs, differing_keys(runs)) is None


def test_memory_variants_pick_the_numeric_memory_limit():
    runs = [_manifest(memory=256), _manifest(memory=512)]
    differing = differing_keys(runs)
    assert set(differing) == {"workload.instances.i0.function", "workload.instances.i0.memory_mb"}
    assert pick_parameter(runs, differing) == "workload.instances.i0.memory_mb"


def test_a_sweep_point_names_the_parameter():
    runs = [_manifest(rate=r, applied={"rate": r}) for r in (10.0, 20.0)]
    assert pick_parameter(runs, differing_keys(runs)) == "sweep_point.applied.rate"


def test_environment_warnings_name_hosts_and_platform_settings_but_not_the_parameter():
    runs = [_manifest(kernel="6.1.0", grace=50), _manifest(kernel="6.1.1", grace=10000)]
    warnings = environment_warnings(runs, ["a", "b"], parameter=None)
    assert any(w.startswith("runs differ in host.kernel (a=6.1.0, b=6.1.1)") for w in warnings)
    assert any("platform setting platform.localwhisk.pause_grace_ms" in w for w in warnings)
    assert environment_warnings(runs[:1] * 2, ["a", "b"], None) == []
    warnings = environment_warnings([_manifest(grace=50), _manifest(grace=10000)], ["a", "b"], parameter="platform.localwhisk.pause_grace_ms")
    assert warnings == []
