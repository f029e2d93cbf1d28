"""spin: a measurement function in the manner of STeLLAR: busy-spin for a requested service time
(never sleeps, so the time is CPU time the platform must grant), optionally return a payload of
a requested size, and report what the instance sees of its runtime.

Input (all optional): ``service_ms`` (default 10), ``payload_bytes`` (default 0),
``service_ms_percentiles`` (``[[percentile, ms], ...]`` ascending, e.g. a trace function's
0/1/25/50/75/99/100th: each invocation draws its own service time from that distribution, the
percentiles joined linearly; it replaces ``service_ms``), ``alloc_mb`` (keep this many MB
resident in the instance, as the trace function's app held: the first call allocates them).
Output: the requested and measured service time, the CPU time used, the payload, the instance
id (random per process, so two invocations with the same id ran in the same container), whether
this was the instance's first invocation (cold), and the cgroup limits the instance sees.
"""

import os
import random
import socket
import time
import uuid

INSTANCE_ID = uuid.uuid4().hex[:16]
STARTED_NS = time.monotonic_ns()
_invocations = 0

# Limits worth reporting, per cgroup version (v1 controller files, v2 unified files).
V1_FILES = {
    "memory": ("memory.limit_in_bytes", "memory.usage_in_bytes"),
    "cpu": ("cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"),
    "cpu,cpuacct": ("cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"),
    "cpuset": ("cpuset.cpus",),
}
V2_FILES = ("memory.max", "memory.current", "cpu.max", "cpu.weight", "cpuset.cpus.effective", "pids.max")


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def cgroup_limits(root="/sys/fs/cgroup"):
    """The cgroup(s) of this process and the limit files readable there: {"version", "paths", "limits"}."""
    text = _read("/proc/self/cgroup")
    if text is None:
        return {"version": None, "paths": {}, "limits": {}}
    paths, limits = {}, {}
    version = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            version = version or 2
            paths["unified"] = path
            base = os.path.join(root, path.lstrip("/"))
            if not os.path.exists(os.path.join(base, "cgroup.controllers")):
                base = os.path.join(root, "unified", path.lstrip("/"))
            for name in V2_FILES:
                value = _read(os.path.join(base, name))
                if value is not None:
                    limits[name] = value
            continue
        version = 1
        for controller in controllers.split(","):
            paths[controller] = path
        files = V1_FILES.get(controllers) or V1_FILES.get(controllers.split(",")[0])
        if files:
            base = os.path.join(root, controllers, path.lstrip("/"))
            for name in files:
                value = _read(os.path.join(base, name))
                if value is not None:
                    limits[name] = value
    return {"version": version, "paths": paths, "limits": limits}


MAX_SERVICE_MS = 3_600_000
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
MAX_ALLOC_MB = 8192


def spin(service_ms):
    """Busy-wait until service_ms of wall-clock time has passed; returns the elapsed ns."""
    start = time.perf_counter_ns()
    deadline = start + int(service_ms * 1_000_000)
    spins = 0
    now = start
    while now < deadline:
        spins += 1
        now = time.perf_counter_ns()
    return now - start, spins


_held = bytearray()


def hold(alloc_mb):
    """Keep ``alloc_mb`` MB resident in this instance (one byte per page written), as an app's
    instance holds its memory between calls: the first call pays for it, the next find it there."""
    global _held
    size = alloc_mb * 1024 * 1024
    if len(_held) != size:
        _held = bytearray(size)
        _held[::4096] = b"\1" * len(range(0, size, 4096))


def draw_service_ms(percentiles, u):
    """The service time at quantile ``u`` (0..100) of ``[[percentile, ms], ...]``, joined linearly."""
    points = sorted((float(p), float(ms)) for p, ms in percentiles)
    if u <= points[0][0]:
        return points[0][1]
    for (p0, v0), (p1, v1) in zip(points, points[1:]):
        if u <= p1:
            return v0 if p1 == p0 else v0 + (v1 - v0) * (u - p0) / (p1 - p0)
    return points[-1][1]


def main(args):
    global _invocations
    _invocations += 1
    try:
        service_ms = float(args.get("service_ms", 10))
        payload_bytes = int(args.get("payload_bytes", 0))
        alloc_mb = int(args.get("alloc_mb", 0))
        percentiles = args.get("service_ms_percentiles")
        if percentiles:
            service_ms = draw_service_ms(percentiles, random.uniform(0.0, 100.0))
    except (TypeError, ValueError, IndexError):
        return {
            "error": "service_ms, payload_bytes and alloc_mb must be numbers, service_ms_percentiles [[p, ms], ...]"
        }
    if not 0 <= alloc_mb <= MAX_ALLOC_MB:
        return {"error": "alloc_mb must be from 0 to %d" % MAX_ALLOC_MB}
    if service_ms < 0 or payload_bytes < 0:
        return {"error": "service_ms and payload_bytes must be >= 0"}
    # NaN compares false with everything; an hour of spinning or a payload past any platform's
    # response limit is a typo, not a benchmark.
    if not service_ms <= MAX_SERVICE_MS or payload_bytes > MAX_PAYLOAD_BYTES:
        return {
            "error": "service_ms must be at most %d and payload_bytes at most %d" % (MAX_SERVICE_MS, MAX_PAYLOAD_BYTES)
        }
    hold(alloc_mb)
    cpu_before = time.process_time_ns()
    elapsed_ns, spins = spin(service_ms)
    cpu_ns = time.process_time_ns() - cpu_before
    return {
        "service_ms": service_ms,
        "elapsed_ms": round(elapsed_ns / 1e6, 3),
        "cpu_ms": round(cpu_ns / 1e6, 3),
        "spins": spins,
        "payload": "x" * payload_bytes,
        "payload_bytes": payload_bytes,
        "alloc_mb": alloc_mb,
        "instance_id": INSTANCE_ID,
        "cold": _invocations == 1,
        "invocation_count": _invocations,
        "instance_age_ms": round((time.monotonic_ns() - STARTED_NS) / 1e6, 3),
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "activation_id": os.environ.get("__OW_ACTIVATION_ID"),
        "cgroup": cgroup_limits(),
    }
