"""Storage servers on the testbed: an S3 object store, an iperf3 server and a shared directory,
started on loopback for a run and stopped after it (like the embedded localwhisk).

API (stable; other modules build on it)::

    with start_object_store(data_dir) as store:      # versitygw, posix backend under data_dir
        store.endpoint_url, store.access_key, store.secret_key, store.region
        store.bucket("faasprof-io")                    # creates it (idempotent), returns the name
        store.client()                                 # functions.iolib.S3 for this store
        store.params()                                 # {"endpoint_url", "access_key", "secret_key", "region"}
    # store.stop() is called on leaving; safe twice

    with start_iperf3_server() as server:             # iperf3 -s on 127.0.0.1, a free port
        server.params()                                # {"host", "port"}

    with start_storage(spec, work_dir) as storage:    # a workload's ``storage`` block
        storage.params()                               # what each function receives (below)

How a function reaches storage: faasprof merges ``storage.params()`` into the parameters of
every instance of a workload that has a ``storage`` block (the instance's own params win on a
clash), so a Python action reads::

    params["s3"] = {"endpoint_url": "http://127.0.0.1:PORT", "access_key": ..., "secret_key": ..., "region": "us-east-1"}
    params["bucket"] = "faasprof-io"               # the block's bucket, created before the run
    params["iperf3"] = {"host": "127.0.0.1", "port": PORT}
    params["shared_dir"] = "/abs/path"             # a directory every sandbox can read and write

``faasprof/functions/iolib.py`` turns ``params["s3"]`` into a client (``S3.from_params``). Actions run on
the same host (localwhisk's process sandboxes, or its docker sandboxes with host networking), so
loopback endpoints reach them. The servers' data lives in ``work_dir`` and is removed on stop
unless the caller keeps it.

This module sits in ``invoker`` because ``faasprof run`` starts the servers of a workload's
``storage`` block (layers go one way); ``faasprof.experiments.storage`` re-exports it for the studies.

Why versitygw: it is a real S3 server (the AWS SDK's own request handling, SigV4 checks,
multipart), a single static Go binary built by ``go install`` from the Go module proxy in about
a minute, with a posix backend that stores objects as plain files, so the object store and the
shared directory sit on the same disk and compare fairly. s3proxy needs a JVM and a Maven build
of many artefacts; minio's module no longer builds with ``go install`` at its current version.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from faasprof.errors import ConfigError, NotReadyError
from faasprof.functions.iolib import S3, PatternReader, S3Error
from faasprof.paths import find_binary

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
VERSITYGW = "versitygw"
STORAGE_KEYS = ("object_store", "iperf3", "shared_dir", "bucket", "objects")


def _free_port() -> int:
    # The servers take a port number, not port 0; the window between close and their bind is
    # short and a clash makes the start fail loudly (it never connects to someone else's).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening_in_proc(port: int, tcp_table: Path = Path("/proc/net/tcp")) -> bool | None:
    """Whether a socket listens on 127.0.0.1:``port`` by the kernel's table (no connection made);
    None where there is no table to read."""
    try:
        lines = tcp_table.read_text(encoding="ascii").splitlines()[1:]
    except OSError:
        return None
    wanted = f"0100007F:{port:04X}"
    return any(
        fields[1] == wanted and fields[3] == "0A" for fields in (line.split() for line in lines) if len(fields) > 3
    )


def _wait_listening(
    port: int, proc: subprocess.Popen, what: str, log: Path, timeout_s: float, connect: bool = True
) -> None:
    """Wait until ``proc`` listens on ``port``. ``connect`` False: by the kernel's table, without a
    connection, for a server that takes any connection as a client's (iperf3 -s answers one test at a
    time, and closes and reopens its socket after each, so a probe's connection left a moment in
    which the port was closed to the real client, seen once as a failed test)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise NotReadyError(f"{what} exited with status {proc.returncode} while starting; see {log}")
        listening = None if connect else _listening_in_proc(port)
        if listening:
            return
        if listening is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                pass
        time.sleep(0.05)
    raise NotReadyError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s:.0f} s; see {log}")


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(STOP_TIMEOUT_S)


class ObjectStore:
    """A running versitygw (posix backend) on 127.0.0.1; a context manager."""

    def __init__(self, data_dir: Path, proc: subprocess.Popen, port: int, access_key: str, secret_key: str, log: Path):
        self.data_dir = data_dir
        self.proc = proc
        self.port = port
        self.endpoint_url = f"http://127.0.0.1:{port}"
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = "us-east-1"
        self.log = log

    def params(self) -> dict:
        return {
            "endpoint_url": self.endpoint_url,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "region": self.region,
        }

    def client(self) -> S3:
        return S3(self.endpoint_url, self.access_key, self.secret_key, self.region)

    def bucket(self, name: str) -> str:
        client = self.client()
        try:
            client.create_bucket(name)
        finally:
            client.close()
        return name

    def put_pattern(self, bucket: str, key: str, size_bytes: int) -> None:
        """An object of ``size_bytes`` pattern bytes, unless one of that size is there already."""
        client = self.client()
        try:
            if client.head_size(bucket, key) != int(size_bytes):
                client.put_stream(bucket, key, PatternReader(size_bytes, seed=key), int(size_bytes))
        finally:
            client.close()

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        _stop(self.proc)

    def __enter__(self) -> "ObjectStore":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_object_store(
    data_dir: str | os.PathLike, access_key: str | None = None, secret_key: str | None = None
) -> ObjectStore:
    """Start versitygw serving ``data_dir`` (created) on a free loopback port; NotReadyError when
    it is not installed (./setup.sh --with storage installs it) or does not come up."""
    binary = find_binary(VERSITYGW)
    if binary is None:
        raise NotReadyError(
            "versitygw not found on PATH, in the venv or in ~/go/bin; install it with ./setup.sh --with storage (go builds it: 1 to 5 min the first time)"
        )
    data_dir = Path(data_dir)
    objects = data_dir / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    access_key = access_key or "faasprof" + secrets.token_hex(4)
    secret_key = secret_key or secrets.token_hex(20)
    port = _free_port()
    log = data_dir / "versitygw.log"
    env = dict(os.environ, ROOT_ACCESS_KEY=access_key, ROOT_SECRET_KEY=secret_key)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [binary, "--port", f"127.0.0.1:{port}", "posix", str(objects)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    try:
        _wait_listening(port, proc, "versitygw", log, START_TIMEOUT_S)
    except BaseException:
        _stop(proc)
        raise
    return ObjectStore(data_dir, proc, port, access_key, secret_key, log)


class Iperf3Server:
    """``iperf3 -s`` on 127.0.0.1; one test at a time (iperf3's own rule), a context manager."""

    def __init__(self, proc: subprocess.Popen, port: int, log: Path):
        self.proc, self.port, self.log = proc, port, log
        self.host = "127.0.0.1"

    def params(self) -> dict:
        return {"host": self.host, "port": self.port}

    def stop(self) -> None:
        _stop(self.proc)

    def __enter__(self) -> "Iperf3Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_iperf3_server(log_dir: str | os.PathLike) -> Iperf3Server:
    binary = find_binary("iperf3")
    if binary is None:
        raise NotReadyError("iperf3 not found; install it with ./setup.sh --with storage or apt-get install iperf3")
    port = _free_port()
    log = Path(log_dir) / "iperf3-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [binary, "-s", "-B", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        _wait_listening(port, proc, "iperf3 -s", log, START_TIMEOUT_S, connect=False)
    except BaseException:
        _stop(proc)
        raise
    return Iperf3Server(proc, port, log)


def check_spec(spec, origin: str = "<workload>") -> dict:
    """The ``storage`` block, validated: {object_store, iperf3, shared_dir: bool, bucket: str,
    objects: [{key, size_bytes}]}. Raises ConfigError naming the field."""
    if not isinstance(spec, dict):
        raise ConfigError(f'{origin}: storage must be an object such as {{"object_store": true}}')
    unknown = sorted(set(spec) - set(STORAGE_KEYS))
    if unknown:
        raise ConfigError(f"{origin}: storage.{unknown[0]} is not a storage field; use {', '.join(STORAGE_KEYS)}")
    for key in ("object_store", "iperf3", "shared_dir"):
        if not isinstance(spec.get(key, False), bool):
            raise ConfigError(f"{origin}: storage.{key} must be true or false")
    bucket = spec.get("bucket", "faasprof-io")
    if (
        not isinstance(bucket, str)
        or not (3 <= len(bucket) <= 63)
        or not bucket.replace("-", "").isalnum()
        or bucket != bucket.lower()
    ):
        raise ConfigError(f"{origin}: storage.bucket {bucket!r} must be 3..63 lower-case letters, digits or '-'")
    objects = []
    for index, item in enumerate(spec.get("objects") or []):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("key"), str)
            or not item["key"]
            or not isinstance(item.get("size_bytes"), int)
            or item["size_bytes"] < 0
        ):
            raise ConfigError(f'{origin}: storage.objects[{index}] must be {{"key": NAME, "size_bytes": N >= 0}}')
        objects.append({"key": item["key"], "size_bytes": item["size_bytes"]})
    if objects and not (spec.get("object_store") or spec.get("shared_dir")):
        raise ConfigError(
            f"{origin}: storage.objects needs storage.object_store or storage.shared_dir true to hold them"
        )
    return {
        "object_store": bool(spec.get("object_store")),
        "iperf3": bool(spec.get("iperf3")),
        "shared_dir": bool(spec.get("shared_dir")),
        "bucket": bucket,
        "objects": objects,
    }


class Storage:
    """The servers a workload's ``storage`` block asked for; ``params()`` is what functions get."""

    def __init__(self, work_dir: Path, spec: dict, remove_work_dir: bool):
        self.work_dir = work_dir
        self.spec = spec
        self.remove_work_dir = remove_work_dir
        self.object_store: ObjectStore | None = None
        self.iperf3: Iperf3Server | None = None
        self.shared_dir: Path | None = None

    def params(self) -> dict:
        out: dict = {"bucket": self.spec["bucket"]}
        if self.object_store is not None:
            out["s3"] = self.object_store.params()
        if self.iperf3 is not None:
            out["iperf3"] = self.iperf3.params()
        if self.shared_dir is not None:
            out["shared_dir"] = str(self.shared_dir)
        return out

    def describe(self) -> dict:
        """For the manifest: what ran, never the secret key."""
        described = {"bucket": self.spec["bucket"], "objects": self.spec["objects"]}
        if self.object_store is not None:
            described["object_store"] = {"server": "versitygw (posix)", "endpoint_url": self.object_store.endpoint_url}
        if self.iperf3 is not None:
            described["iperf3"] = self.iperf3.params()
        if self.shared_dir is not None:
            described["shared_dir"] = str(self.shared_dir)
        return described

    def stop(self) -> None:
        for server in (self.object_store, self.iperf3):
            if server is not None:
                server.stop()
        if self.remove_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> "Storage":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _shared_temp_root() -> str | None:
    """Where a run's temporary storage goes: outside /tmp, which each process sandbox has of its
    own (as each OpenWhisk container does), so the shared directory stays one for all of them."""
    for candidate in ("/var/tmp",):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            return candidate
    return None


def start_storage(spec, work_dir: str | os.PathLike | None = None, origin: str = "<workload>") -> Storage:
    """Start what ``spec`` (a workload's ``storage`` block) names and put its objects in place
    (in the object store and, when shared_dir is on, as files there too). With ``work_dir=None``
    a temporary directory holds the data and is removed on stop."""
    spec = check_spec(spec, origin)
    remove = work_dir is None
    work = (
        Path(tempfile.mkdtemp(prefix="faasprof-storage-", dir=_shared_temp_root()))
        if work_dir is None
        else Path(work_dir)
    )
    work.mkdir(parents=True, exist_ok=True)
    storage = Storage(work, spec, remove)
    try:
        if spec["object_store"]:
            storage.object_store = start_object_store(work / "object_store")
            storage.object_store.bucket(spec["bucket"])
            for item in spec["objects"]:
                storage.object_store.put_pattern(spec["bucket"], item["key"], item["size_bytes"])
        if spec["iperf3"]:
            storage.iperf3 = start_iperf3_server(work)
        if spec["shared_dir"]:
            storage.shared_dir = work / "shared"
            bucket_dir = storage.shared_dir / spec["bucket"]
            bucket_dir.mkdir(parents=True, exist_ok=True)
            # Sandboxes run as users of their own (localwhisk's process sandboxes, docker): everyone
            # may write here, and pass through the work folder to it (mkdtemp makes that 0700; it
            # gains only the right to pass, its other contents stay unlisted).
            os.chmod(work, stat.S_IMODE(work.stat().st_mode) | 0o111)
            os.chmod(storage.shared_dir, 0o777)
            os.chmod(bucket_dir, 0o777)
            for item in spec["objects"]:
                path = bucket_dir / item["key"]
                path.parent.mkdir(parents=True, exist_ok=True)
                for folder in path.relative_to(bucket_dir).parents[:-1]:  # a key's folders, as the bucket's
                    os.chmod(bucket_dir / folder, 0o777)
                if not path.is_file() or path.stat().st_size != item["size_bytes"]:
                    reader = PatternReader(item["size_bytes"], seed=item["key"])
                    with open(path, "wb") as handle:
                        while piece := reader(1 << 20):
                            handle.write(piece)
                # Written under the command's umask 077 (private run files); every sandbox reads it.
                os.chmod(path, 0o644)
    except (OSError, S3Error) as error:
        storage.stop()
        raise NotReadyError(
            f"storage: could not prepare the servers in {work} ({error}); free disk space there"
        ) from None
    except BaseException:
        storage.stop()
        raise
    return storage


def start_workload_storage(workload, say=None):
    """(storage or None, workload): for a workload with a ``storage`` block, its servers started
    and their ``params()`` merged into the params of every instance that names a function (an
    OpenWhisk action; the instance's own values win); without one, (None, workload) unchanged."""
    spec = (workload.raw or {}).get("storage")
    if spec is None:
        return None, workload
    storage = start_storage(spec, origin=workload.origin)
    if say:
        say(
            f"storage for the run: {', '.join(sorted(k for k in storage.describe() if k not in ('bucket', 'objects')))} on 127.0.0.1"
        )
    given = storage.params()
    instances = tuple(
        dataclasses.replace(instance, params={**given, **(instance.params or {})})
        if instance.names_functions
        else instance
        for instance in workload.instances
    )
    return storage, dataclasses.replace(workload, instances=instances)
