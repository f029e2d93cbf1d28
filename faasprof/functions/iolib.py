"""iolib: what the I/O functions (io-object, io-disk, io-net, io-image, io-wordcount) share,
stdlib only, so a function's zip carries it as a plain file (each function folder links to it).

- ``S3``: a small S3 client over ``http.client`` that signs with AWS Signature Version 4
  (path-style addressing, ``UNSIGNED-PAYLOAD``, so no hashing of the body counts as compute).
  ``from_params(params["s3"])`` takes ``{"endpoint_url", "access_key", "secret_key", "region"}``,
  the block faasprof's ``storage`` hands every function of a workload.
- ``FileStore``: the same get/put/list over a directory (the shared local directory, or an NFS
  mount on the testbed), so a function names its backend with ``backend: "s3" | "file"``.
- ``Breakdown``: where an invocation's time went. ``with bd.phase("network"):`` adds the block's
  monotonic time to that phase; bytes moved are counted per direction. ``result()`` reports
  ``compute_ms``, ``disk_ms``, ``network_ms``, ``setup_ms`` (putting missing inputs in place,
  ``prepare: true``), their sum ``accounted_ms``, the function's own
  ``elapsed_ms`` and the bytes. The phases never overlap, so accounted <= elapsed; the gap is
  the glue between phases (and is what the tests bound).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
import http.client
import os
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET

PHASES = ("compute", "disk", "network", "setup")  # setup: preparing missing inputs, outside the measured work
STREAM_BYTES = 1 << 20  # one read/write call moves at most this much: memory stays flat for 200 MB objects


class Breakdown:
    """Monotonic time per phase and bytes per direction for one invocation."""

    def __init__(self):
        self.started_ns = time.monotonic_ns()
        self.ns = dict.fromkeys(PHASES, 0)
        self.bytes = {"disk_read": 0, "disk_write": 0, "network_in": 0, "network_out": 0}
        self._stack = []  # (phase, monotonic ns it last resumed)
        self.counters_before = sandbox_counters()

    @contextlib.contextmanager
    def phase(self, name):
        """Time the block as ``name``. A phase opened inside another pauses the outer one (a
        disk write inside a download loop is disk, not network), so phases never overlap."""
        now = time.monotonic_ns()
        if self._stack:
            outer, outer_began = self._stack[-1]
            self.ns[outer] += now - outer_began
        self._stack.append((name, now))
        try:
            yield
        finally:
            now = time.monotonic_ns()
            _, began = self._stack.pop()
            self.ns[name] += now - began
            if self._stack:
                outer, _ = self._stack[-1]
                self._stack[-1] = (outer, now)

    def add_bytes(self, what, count):
        self.bytes[what] += int(count)

    def result(self, **extra):
        elapsed_ns = time.monotonic_ns() - self.started_ns
        accounted_ns = sum(self.ns.values())
        out = {f"{name}_ms": self.ns[name] / 1e6 for name in PHASES}
        out.update(accounted_ms=accounted_ns / 1e6, elapsed_ms=elapsed_ns / 1e6, bytes=dict(self.bytes))
        network_s = self.ns["network"] / 1e9
        moved = self.bytes["network_in"] + self.bytes["network_out"]
        out["network_mb_per_s"] = (moved / 1e6 / network_s) if network_s > 0 and moved else None
        disk_s = self.ns["disk"] / 1e9
        disk_moved = self.bytes["disk_read"] + self.bytes["disk_write"]
        out["disk_mb_per_s"] = (disk_moved / 1e6 / disk_s) if disk_s > 0 and disk_moved else None
        after = sandbox_counters()
        sandbox = {}
        for name, value in after.items():
            before = self.counters_before.get(name)
            sandbox[name] = value - before if value is not None and before is not None else None
        out["sandbox"] = sandbox
        return {"breakdown": out, **extra}


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def _own_cgroup_dirs(root="/sys/fs/cgroup"):
    """(v2 dir or None, v1 blkio dir or None) of this process."""
    text = _read_text("/proc/self/cgroup") or ""
    v2 = v1 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[1] == "" and parts[0] == "0":
            v2 = os.path.join(root, parts[2].lstrip("/"))
        elif "blkio" in parts[1].split(","):
            for mount in ("blkio", "blkio,cpu", "cpu,cpuacct,blkio"):
                candidate = os.path.join(root, mount, parts[2].lstrip("/"))
                if os.path.isdir(candidate):
                    v1 = candidate
                    break
    return v2, v1


def sandbox_counters():
    """Cumulative counters of the sandbox this process runs in: block bytes read and written by
    its cgroup (v2 io.stat, v1 blkio.throttle.io_service_bytes; None where not readable) and
    network bytes of its network namespace (/proc/self/net/dev: per sandbox with docker's own
    namespace, the whole host's with process sandboxes)."""
    counters = {"block_read_bytes": None, "block_write_bytes": None, "net_rx_bytes": None, "net_tx_bytes": None}
    v2, v1 = _own_cgroup_dirs()
    text = _read_text(os.path.join(v2, "io.stat")) if v2 else None
    if text is not None:
        read = write = 0
        for line in text.splitlines():
            for field in line.split()[1:]:
                key, _, value = field.partition("=")
                if key == "rbytes":
                    read += int(value)
                elif key == "wbytes":
                    write += int(value)
        counters["block_read_bytes"], counters["block_write_bytes"] = read, write
    elif v1:
        text = _read_text(os.path.join(v1, "blkio.throttle.io_service_bytes"))
        if text is not None:
            read = write = 0
            for line in text.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in ("Read", "Write"):
                    if parts[1] == "Read":
                        read += int(parts[2])
                    else:
                        write += int(parts[2])
            counters["block_read_bytes"], counters["block_write_bytes"] = read, write
    text = _read_text("/proc/self/net/dev")
    if text is not None:
        rx = tx = 0
        for line in text.splitlines()[2:]:
            name, _, rest = line.partition(":")
            fields = rest.split()
            if len(fields) >= 9:
                rx += int(fields[0])
                tx += int(fields[8])
        counters["net_rx_bytes"], counters["net_tx_bytes"] = rx, tx
    return counters


# -- S3 over http.client, Signature Version 4 -----------------------------------------------------


def _sign(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class S3Error(Exception):
    pass


class S3:
    """Path-style S3 requests to one endpoint; one keep-alive connection per client."""

    def __init__(self, endpoint_url, access_key, secret_key, region="us-east-1", timeout_s=120.0):
        parsed = urllib.parse.urlsplit(endpoint_url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"s3.endpoint_url {endpoint_url!r} must be http://HOST:PORT")
        self.host, self.port = parsed.hostname, parsed.port or 80
        self.netloc = parsed.netloc
        self.access_key, self.secret_key, self.region = access_key, secret_key, region
        self.timeout_s = timeout_s
        self._conn = None

    @classmethod
    def from_params(cls, block):
        if not isinstance(block, dict) or not block.get("endpoint_url"):
            raise ValueError(
                "backend s3 needs an s3 parameter {endpoint_url, access_key, secret_key}; faasprof's storage block passes it"
            )
        return cls(block["endpoint_url"], block["access_key"], block["secret_key"], block.get("region", "us-east-1"))

    def _connection(self):
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        return self._conn

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _headers(self, method, path, query, extra):
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        headers = {"host": self.netloc, "x-amz-date": amz_date, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"}
        headers.update({k.lower(): str(v) for k, v in extra.items()})
        signed = sorted(headers)
        canonical_query = "&".join(
            f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
            for k, v in sorted(query.items())
        )
        canonical = "\n".join(
            [
                method,
                urllib.parse.quote(path, safe="/-_.~"),
                canonical_query,
                "".join(f"{name}:{headers[name].strip()}\n" for name in signed),
                ";".join(signed),
                "UNSIGNED-PAYLOAD",
            ]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = _sign(_sign(_sign(_sign(("AWS4" + self.secret_key).encode(), day), self.region), "s3"), "aws4_request")
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, SignedHeaders={';'.join(signed)}, Signature={signature}"
        )
        return headers, canonical_query

    def request(self, method, path, query=None, body=None, length=None, headers=None, sink=None):
        """One request; ``body`` is bytes or a callable ``read(n)``; ``sink(chunk)`` takes the
        response body in pieces (else it is returned). Returns (status, bytes_or_count)."""
        query = query or {}
        extra = dict(headers or {})
        if body is not None or method == "PUT":
            extra["content-length"] = str(length if length is not None else len(body or b""))
        sent, canonical_query = self._headers(method, path, query, extra)
        target = urllib.parse.quote(path, safe="/-_.~") + (f"?{canonical_query}" if canonical_query else "")
        for attempt in (0, 1):  # a keep-alive connection the server closed is retried once, fresh
            conn = self._connection()
            try:
                conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in sent.items():
                    conn.putheader(name, value)
                conn.endheaders()
                if callable(body):
                    remaining = int(length)
                    while remaining > 0:
                        piece = body(min(STREAM_BYTES, remaining))
                        if not piece:
                            raise S3Error(f"{method} {path}: the body ended {remaining} bytes short")
                        conn.send(piece)
                        remaining -= len(piece)
                elif body:
                    conn.send(body)
                response = conn.getresponse()
                break
            except (ConnectionError, http.client.RemoteDisconnected, http.client.CannotSendRequest):
                self.close()
                if attempt or callable(body):
                    raise
        if response.status >= 300:
            text = response.read().decode("utf-8", "replace")
            raise S3Error(f"{method} {path}: HTTP {response.status} {text[:300]}")
        if sink is None:
            return response.status, response.read()
        total = 0
        while True:
            piece = response.read(STREAM_BYTES)
            if not piece:
                break
            total += len(piece)
            sink(piece)
        return response.status, total

    def create_bucket(self, bucket):
        try:
            self.request("PUT", f"/{bucket}")
        except S3Error as error:
            if "BucketAlreadyOwnedByYou" not in str(error) and "BucketAlreadyExists" not in str(error):
                raise

    def put(self, bucket, key, data):
        return self.request("PUT", f"/{bucket}/{key}", body=data)

    def put_stream(self, bucket, key, read, length):
        return self.request("PUT", f"/{bucket}/{key}", body=read, length=length)

    def get(self, bucket, key, sink=None):
        return self.request("GET", f"/{bucket}/{key}", sink=sink)[1]

    def head_size(self, bucket, key):
        """The object's size, or None when it does not exist."""
        sent, _ = self._headers("HEAD", f"/{bucket}/{key}", {}, {})
        conn = self._connection()
        conn.putrequest(
            "HEAD", urllib.parse.quote(f"/{bucket}/{key}", safe="/-_.~"), skip_host=True, skip_accept_encoding=True
        )
        for name, value in sent.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        response.read()
        if response.status == 404:
            return None
        if response.status >= 300:
            raise S3Error(f"HEAD /{bucket}/{key}: HTTP {response.status}")
        return int(response.getheader("content-length") or 0)

    def list(self, bucket, prefix=""):
        """Keys under ``prefix`` (all pages), sorted."""
        keys, token = [], None
        while True:
            query = {"list-type": "2", "prefix": prefix}
            if token:
                query["continuation-token"] = token
            _, text = self.request("GET", f"/{bucket}", query=query)
            root = ET.fromstring(text)
            ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
            keys += [item.findtext(f"{ns}Key") for item in root.iter(f"{ns}Contents")]
            if root.findtext(f"{ns}IsTruncated") != "true":
                return sorted(keys)
            token = root.findtext(f"{ns}NextContinuationToken")


def _shared_folders(path):
    """``path`` and its missing parents, writable by every user: the shared directory is one for
    all sandboxes, and each may run as a user of its own."""
    previous = os.umask(0)
    try:
        os.makedirs(path, mode=0o777, exist_ok=True)
    finally:
        os.umask(previous)


class FileStore:
    """get/put/list over ``root/bucket/key`` files: the shared directory or an NFS mount."""

    def __init__(self, root):
        if not root or not os.path.isdir(root):
            raise ValueError(
                f"backend file needs shared_dir, an existing directory (got {root!r}); faasprof's storage block passes it"
            )
        self.root = root

    def _path(self, bucket, key):
        return os.path.join(self.root, bucket, *key.split("/"))

    def create_bucket(self, bucket):
        _shared_folders(os.path.join(self.root, bucket))

    def _replace(self, bucket, key, write):
        """Write the object to a new file beside it, then put that in its place: a reader never
        sees half an object (a put replaces it whole, as an object store's does), and a sandbox of
        another user may replace what one before it wrote (the folder lets everyone write; the file
        itself would not)."""
        path = self._path(bucket, key)
        _shared_folders(os.path.dirname(path))
        handle = tempfile.NamedTemporaryFile(dir=os.path.dirname(path), prefix=".put-", delete=False)
        try:
            with handle:
                write(handle)
            os.chmod(handle.name, 0o666)
            os.replace(handle.name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(handle.name)
            raise

    def put(self, bucket, key, data):
        self._replace(bucket, key, lambda handle: handle.write(data))

    def put_stream(self, bucket, key, read, length):
        def write(handle):
            remaining = int(length)
            while remaining > 0:
                piece = read(min(STREAM_BYTES, remaining))
                if not piece:
                    raise OSError(f"{self._path(bucket, key)}: the body ended {remaining} bytes short")
                handle.write(piece)
                remaining -= len(piece)

        self._replace(bucket, key, write)

    def get(self, bucket, key, sink=None):
        with open(self._path(bucket, key), "rb") as handle:
            if sink is None:
                return handle.read()
            total = 0
            while True:
                piece = handle.read(STREAM_BYTES)
                if not piece:
                    return total
                total += len(piece)
                sink(piece)

    def head_size(self, bucket, key):
        try:
            return os.path.getsize(self._path(bucket, key))
        except FileNotFoundError:
            return None

    def list(self, bucket, prefix=""):
        base = os.path.join(self.root, bucket)
        keys = []
        for dirpath, _, filenames in os.walk(base):
            for name in filenames:
                if name.startswith(".put-"):  # an object being written (FileStore._replace)
                    continue
                key = os.path.relpath(os.path.join(dirpath, name), base).replace(os.sep, "/")
                if key.startswith(prefix):
                    keys.append(key)
        return sorted(keys)


def store_from_params(params):
    """(store, phase) for ``params["backend"]``: "s3" (time is network) or "file" (time is disk,
    or network when the directory is an NFS mount, ``shared_is_network: true``)."""
    backend = params.get("backend", "s3")
    if backend == "s3":
        return S3.from_params(params.get("s3")), "network"
    if backend == "file":
        return FileStore(params.get("shared_dir")), ("network" if params.get("shared_is_network") else "disk")
    raise ValueError(f"backend {backend!r}: use s3 or file")


def pattern_bytes(size, seed=0):
    """``size`` bytes of a cheap, repeatable, not-all-zero pattern (no compression tricks on disk)."""
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    whole, rest = divmod(int(size), len(block))
    return block * whole + block[:rest]


class PatternReader:
    """A ``read(n)`` over ``size`` pattern bytes without holding them all."""

    def __init__(self, size, seed=0):
        self.block = pattern_bytes(STREAM_BYTES, seed)
        self.left = int(size)

    def __call__(self, n):
        n = min(n, self.left, len(self.block))
        self.left -= n
        return self.block[:n]
