"""The storage servers (faasprof/invoker/storage.py): a real versitygw on loopback spoken to by the
functions' own SigV4 client, the iperf3 server, the shared directory, the storage block."""

from __future__ import annotations

import socket

import pytest

from faasprof.errors import ConfigError
from faasprof.functions.iolib import S3, S3Error
from faasprof.invoker import storage as storage_mod
from faasprof.invoker.storage import check_spec, find_binary, start_iperf3_server, start_object_store, start_storage
from faasprof.workload.spec import workload_from_dict

needs_versitygw = pytest.mark.skipif(
    find_binary("versitygw") is None, reason="versitygw not installed (./setup.sh --with storage installs it)"
)
needs_iperf3 = pytest.mark.skipif(
    find_binary("iperf3") is None, reason="iperf3 not installed (./setup.sh --with storage installs it)"
)


def _port_closed(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return False
    except OSError:
        return True


@needs_versitygw
def test_object_store_round_trip_with_the_functions_client(tmp_path):
    with start_object_store(tmp_path / "s3") as store:
        assert store.endpoint_url.startswith("http://127.0.0.1:")
        assert store.bucket("faasprof-test") == "faasprof-test"
        store.bucket("faasprof-test")  # idempotent
        client = store.client()
        payload = bytes(range(256)) * 4096  # 1 MiB
        client.put("faasprof-test", "dir/one", payload)
        client.put("faasprof-test", "dir/two", b"x")
        assert client.get("faasprof-test", "dir/one") == payload
        pieces = []
        assert client.get("faasprof-test", "dir/one", sink=pieces.append) == len(payload)
        assert b"".join(pieces) == payload
        assert client.head_size("faasprof-test", "dir/one") == len(payload)
        assert client.head_size("faasprof-test", "missing") is None
        assert client.list("faasprof-test", "dir/") == ["dir/one", "dir/two"]
        # The server checks the signature: a wrong secret is refused.
        wrong = S3(store.endpoint_url, store.access_key, "not-the-secret")
        with pytest.raises(S3Error, match="403"):
            wrong.get("faasprof-test", "dir/one")
        client.close()
        port = store.port
    assert not store.running() and _port_closed(port)


@needs_versitygw
def test_streamed_put_of_a_pattern_object(tmp_path):
    with start_object_store(tmp_path / "s3") as store:
        store.bucket("faasprof-test")
        store.put_pattern("faasprof-test", "chunk", 3 * 1024 * 1024 + 5)
        client = store.client()
        assert client.head_size("faasprof-test", "chunk") == 3 * 1024 * 1024 + 5
        client.close()


@needs_versitygw
@needs_iperf3
def test_storage_block_starts_everything_and_puts_objects_in_both_backends(tmp_path):
    spec = {
        "object_store": True,
        "iperf3": True,
        "shared_dir": True,
        "bucket": "faasprof-io",
        "objects": [{"key": "chunk-1000", "size_bytes": 1000}],
    }
    with start_storage(spec, tmp_path / "work") as storage:
        params = storage.params()
        assert set(params) == {"bucket", "s3", "iperf3", "shared_dir"}
        assert set(params["s3"]) == {"endpoint_url", "access_key", "secret_key", "region"}
        assert (tmp_path / "work" / "shared" / "faasprof-io" / "chunk-1000").stat().st_size == 1000
        client = S3.from_params(params["s3"])
        assert client.head_size("faasprof-io", "chunk-1000") == 1000
        client.close()
        assert "secret_key" not in str(storage.describe())
        ports = [storage.object_store.port, storage.iperf3.port]
    assert all(_port_closed(port) for port in ports)


def test_temporary_work_dir_is_removed(tmp_path):
    storage = start_storage({"shared_dir": True})
    shared = storage.params()["shared_dir"]
    storage.stop()
    import os

    assert not os.path.exists(shared)


@needs_iperf3
def test_iperf3_server_listens_and_stops(tmp_path):
    with start_iperf3_server(tmp_path) as server:
        assert not _port_closed(server.port)
        port = server.port
    assert _port_closed(port)


@needs_iperf3
def test_iperf3_is_found_listening_without_a_connection_that_would_spend_its_one_test(tmp_path):
    """iperf3 -s takes any connection as a client's test and reopens its socket after it: the
    start's own probe connection left a moment in which the real client's was refused (a clean
    clone's suite failed once on it). The start reads the kernel's table instead."""
    with start_iperf3_server(tmp_path) as server:
        assert storage_mod._listening_in_proc(server.port) is True
        assert not _port_closed(server.port)  # the first connection is the client's, and it is taken
    assert storage_mod._listening_in_proc(server.port) is False


def test_the_kernel_table_of_listening_sockets_is_read_exactly(tmp_path):
    table = tmp_path / "tcp"
    table.write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"
        "   1: 0100007F:1F91 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1\n"
    )
    assert storage_mod._listening_in_proc(8080, table) is True  # 0x1F90, state 0A (LISTEN)
    assert storage_mod._listening_in_proc(8081, table) is False  # established, not listening
    assert storage_mod._listening_in_proc(8080, tmp_path / "missing") is None


@pytest.mark.parametrize(
    "spec,message",
    [
        ({"objectstore": True}, "storage.objectstore is not a storage field"),
        ({"object_store": "yes"}, "storage.object_store must be true or false"),
        ({"object_store": True, "bucket": "IO"}, "storage.bucket 'IO'"),
        ({"object_store": True, "objects": [{"key": "a"}]}, r"storage.objects\[0\]"),
        ({"iperf3": True, "objects": [{"key": "a", "size_bytes": 1}]}, "storage.objects needs"),
    ],
)
def test_bad_storage_blocks_name_the_field(spec, message):
    with pytest.raises(ConfigError, match=message):
        check_spec(spec, "w.json")


def test_workload_schema_accepts_storage_and_io_study_blocks(tmp_path):
    data = {
        "test_name": "t",
        "test_duration_in_seconds": 2,
        "random_seed": 1,
        "blocking_cli": True,
        "storage": {"object_store": True, "objects": [{"key": "k", "size_bytes": 1}]},
        "instances": {"a": {"application": "io-object", "distribution": "Burst", "burst_size": 1, "burst_gap_s": 1}},
        "io_study": {"memory_mb": [128], "concurrency": [1, 2]},
    }
    workload = workload_from_dict(data)
    assert workload.raw["storage"]["object_store"] is True
    with pytest.raises(ConfigError, match="storage"):
        workload_from_dict({**data, "storage": {"object_stor": True}})
