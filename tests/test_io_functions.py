"""The io-* functions against real storage servers on loopback (versitygw, iperf3, a shared
directory), run by the native runner as a sandbox would run them: results, bytes moved, and the
breakdown that adds up (phases never overlap; the gap to the function's own elapsed time is the
glue between phases, bounded here)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from faasprof.experiments import native
from faasprof.functions import iolib
from faasprof.functions.catalogue import lookup
from faasprof.invoker.storage import find_binary, start_storage

needs_versitygw = pytest.mark.skipif(
    find_binary("versitygw") is None, reason="versitygw not installed (./setup.sh --with storage installs it)"
)
needs_iperf3 = pytest.mark.skipif(
    find_binary("iperf3") is None, reason="iperf3 not installed (./setup.sh --with storage installs it)"
)
# The glue between phases (loop bookkeeping, result assembly) on a loaded 2-core host.
GAP_MS = 40.0
GAP_SHARE = 0.2


def _call(name, params):
    answer = native.call_once(lookup(name), params, timeout_s=120)
    assert answer["ok"], answer.get("error")
    result = answer["result"]
    assert "error" not in result, result.get("error")
    return result


def _adds_up(breakdown):
    parts = sum(breakdown[f"{phase}_ms"] for phase in iolib.PHASES)
    assert breakdown["accounted_ms"] == pytest.approx(parts)
    assert breakdown["accounted_ms"] <= breakdown["elapsed_ms"] + 1e-6
    assert breakdown["elapsed_ms"] - breakdown["accounted_ms"] <= max(GAP_MS, GAP_SHARE * breakdown["elapsed_ms"])


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    if find_binary("versitygw") is None:
        pytest.skip("versitygw not installed (./setup.sh --with storage installs it)")
    spec = {
        "object_store": True,
        "shared_dir": True,
        "iperf3": find_binary("iperf3") is not None,
        "bucket": "faasprof-io",
        "objects": [{"key": "chunk-3000000", "size_bytes": 3000000}],
    }
    with start_storage(spec, tmp_path_factory.mktemp("storage")) as running:
        yield running


@needs_versitygw
@pytest.mark.parametrize("backend", ["s3", "file"])
def test_object_download_and_upload(storage, backend, tmp_path):
    params = {**storage.params(), "backend": backend, "size_bytes": 3000000, "local_dir": str(tmp_path)}
    down = _call("io-object", {**params, "op": "download"})
    assert down["complete"] and down["moved_bytes"] == 3000000
    bd = down["breakdown"]
    assert bd["bytes"]["disk_write"] == 3000000
    if backend == "s3":
        assert bd["bytes"]["network_in"] == 3000000 and bd["network_ms"] > 0 and bd["network_mb_per_s"] > 0
    else:
        assert bd["bytes"]["network_in"] == 0 and bd["network_ms"] == 0
    _adds_up(bd)
    up = _call("io-object", {**params, "op": "upload", "key": "uploaded", "size_bytes": 2000000})
    assert up["moved_bytes"] == 2000000
    _adds_up(up["breakdown"])
    store = (
        iolib.S3.from_params(storage.params()["s3"])
        if backend == "s3"
        else iolib.FileStore(storage.params()["shared_dir"])
    )
    assert store.get("faasprof-io", "uploaded") == iolib.pattern_bytes(2000000, seed="uploaded")
    assert list(tmp_path.iterdir()) == []  # the local copy is removed


@needs_versitygw
def test_image_pipeline_over_the_object_store(storage, tmp_path):
    params = {
        **storage.params(),
        "backend": "s3",
        "count": 2,
        "width": 64,
        "height": 64,
        "prepare": True,
        "prefix": "img/",
        "local_dir": str(tmp_path),
    }
    first = _call("io-image", params)
    again = _call("io-image", {**params, "prepare": False})
    assert first["images"] == again["images"] == 2 and first["checksum"] == again["checksum"]
    bd = again["breakdown"]
    assert bd["setup_ms"] == 0 and bd["compute_ms"] > 0 and bd["network_ms"] > 0 and bd["disk_ms"] > 0
    assert bd["bytes"]["network_in"] == bd["bytes"]["network_out"] == 2 * (64 * 64 + len(b"P5\n64 64\n255\n"))
    _adds_up(bd)
    client = iolib.S3.from_params(storage.params()["s3"])
    assert client.list("faasprof-io", "results/0") == ["results/0000.pgm", "results/0001.pgm"]
    client.close()


@needs_versitygw
def test_wordcount_gives_the_same_count_on_both_backends(storage, tmp_path):
    counts = {}
    for backend in ("s3", "file"):
        params = {
            **storage.params(),
            "backend": backend,
            "blocks": 3,
            "words_per_block": 5000,
            "prepare": True,
            "local_dir": str(tmp_path),
        }
        result = _call("io-wordcount", params)
        counts[backend] = (result["words"], result["top"])
        _adds_up(result["breakdown"])
    assert counts["s3"] == counts["file"]
    assert counts["s3"][0] == 15000 and counts["s3"][1][0] == ["serverless", 3297]


@needs_versitygw
@needs_iperf3
@pytest.mark.parametrize("direction", ["upload", "download"])
def test_iperf3_against_the_storage_server(storage, direction):
    result = _call("io-net", {**storage.params(), "direction": direction, "bytes": 8 << 20})
    assert result["self_served"] is False and result["received_bits_per_s"] > 1e6
    key = "network_out" if direction == "upload" else "network_in"
    assert result["breakdown"]["bytes"][key] >= 8 << 20
    _adds_up(result["breakdown"])


@pytest.mark.parametrize("pattern", ["sequential", "random"])
def test_disk_write_then_read(pattern, tmp_path):
    result = _call("io-disk", {"pattern": pattern, "size_bytes": 2 << 20, "dir": str(tmp_path)})
    bd = result["breakdown"]
    assert bd["bytes"]["disk_write"] == bd["bytes"]["disk_read"] == 2 << 20
    assert result["write_mb_per_s"] > 0 and result["read_mb_per_s"] > 0
    _adds_up(bd)
    assert list(tmp_path.iterdir()) == []


class _Clock:
    def __init__(self):
        self.ns = 0

    def monotonic_ns(self):
        return self.ns


def test_nested_phases_never_overlap(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(iolib.time, "monotonic_ns", clock.monotonic_ns)
    bd = iolib.Breakdown()
    with bd.phase("network"):
        clock.ns += 10_000_000
        with bd.phase("disk"):
            clock.ns += 3_000_000
        clock.ns += 5_000_000
    clock.ns += 1_000_000  # glue, outside every phase
    result = bd.result()["breakdown"]
    assert result["network_ms"] == 15.0 and result["disk_ms"] == 3.0
    assert result["accounted_ms"] == 18.0 and result["elapsed_ms"] == 19.0


def test_s3_client_refuses_a_bad_endpoint():
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        iolib.S3("https://example.invalid", "a", "b")
    with pytest.raises(ValueError, match="storage block passes it"):
        iolib.store_from_params({"backend": "s3"})


def _put_as(uid: int, store: iolib.FileStore, data: bytes) -> int:
    """The exit status of a child that, as ``uid``, puts ``data`` under one key: 0 when it could."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.setgid(uid)
            os.setuid(uid)
            store.put("bucket", "dir/key", data)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to put as two other users")
def test_a_shared_directory_object_is_replaced_by_a_sandbox_of_another_user(request):
    """localwhisk's sandboxes each run as a user of their own: an object one wrote into the shared
    directory is replaced by the next (it was 'Permission denied' for the second user), whole,
    and stays readable by all; a put's temporary file is never listed as an object."""
    # Under /var/tmp as the storage block's is: pytest's tmp folders are closed to other users.
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="faasprof-test-shared-"))
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    work.chmod(0o711)
    shared = work / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    store = iolib.FileStore(str(shared))
    assert _put_as(65531, store, b"first") == 0
    assert _put_as(65532, store, b"second") == 0
    assert store.get("bucket", "dir/key") == b"second"
    assert (shared / "bucket" / "dir" / "key").stat().st_mode & 0o777 == 0o666
    (shared / "bucket" / "dir" / ".put-half").write_bytes(b"x")
    assert store.list("bucket") == ["dir/key"]
