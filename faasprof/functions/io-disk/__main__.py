"""io-disk: sequential or random write then read of a file of a given size on the sandbox's
local disk (FunctionBench's dd / random-access disk tests), with fsync so the write reaches the
device and ``posix_fadvise(DONTNEED)`` so the read is not served from the page cache alone.

Input: ``pattern`` "sequential" | "random"; ``size_bytes`` (default 8 MiB); ``block_bytes``
(default 4 KiB for random, 1 MiB for sequential); ``dir`` (default /tmp, or ``shared_dir`` when
``on_shared`` is true, to measure the shared directory); ``seed`` for the random offsets.
Output: the write and read rates in MB/s, operations done, and the breakdown (iolib).
"""

import os
import random
import uuid

import iolib


def main(params):
    pattern = params.get("pattern", "sequential")
    if pattern not in ("sequential", "random"):
        return {"error": f"pattern {pattern!r}: use sequential or random"}
    size = int(params.get("size_bytes", 8 << 20))
    block = int(params.get("block_bytes", 4096 if pattern == "random" else 1 << 20))
    directory = params.get("shared_dir") if params.get("on_shared") else params.get("dir", "/tmp")
    path = os.path.join(directory, f"io-disk-{uuid.uuid4().hex}")
    blocks = max(1, size // block)
    bd = iolib.Breakdown()
    with bd.phase("compute"):
        data = iolib.pattern_bytes(block, seed=pattern)
        offsets = [index * block for index in range(blocks)]
        if pattern == "random":
            random.Random(params.get("seed", 1)).shuffle(offsets)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with bd.phase("disk"):
                if pattern == "random":
                    os.ftruncate(fd, blocks * block)  # random writes land inside the file, not past its end
                for offset in offsets:
                    os.pwrite(fd, data, offset)
                os.fsync(fd)
            write_ns = bd.ns["disk"]
            bd.add_bytes("disk_write", blocks * block)
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            read_bytes = 0
            with bd.phase("disk"):
                for offset in offsets:
                    read_bytes += len(os.pread(fd, block, offset))
            read_ns = bd.ns["disk"] - write_ns
            bd.add_bytes("disk_read", read_bytes)
        finally:
            os.close(fd)
    finally:
        if os.path.exists(path):
            os.remove(path)
    return bd.result(
        pattern=pattern,
        size_bytes=blocks * block,
        block_bytes=block,
        operations=2 * blocks,
        read_bytes=read_bytes,
        write_mb_per_s=_rate(blocks * block, write_ns),
        read_mb_per_s=_rate(read_bytes, read_ns),
    )


def _rate(count, ns):
    return count / 1e6 / (ns / 1e9) if ns > 0 else None
