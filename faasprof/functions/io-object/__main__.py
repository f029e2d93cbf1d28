"""io-object: download or upload one object of a given size (FunctionBench's storage download/
upload), from the S3 object store or from a shared directory, with a local-disk copy.

Input: ``op`` "download" | "upload"; ``size_bytes`` (the chunk, default 1 MiB); ``key``
(default ``chunk-<size_bytes>``); ``bucket``; ``backend`` "s3" (with ``s3``) | "file" (with
``shared_dir``); ``local_dir`` (default /tmp) for the local copy; ``prepare`` (default false):
put the object first when it is missing (``setup_ms``) (a download's sample input is self-contained).
A download streams the object to a local file (disk) and a upload writes the local file first,
then streams it up. Output: op, key, size_bytes, bytes moved, and the breakdown (iolib).
"""

import os
import uuid

import iolib


def main(params):
    op = params.get("op", "download")
    if op not in ("download", "upload"):
        return {"error": f"op {op!r}: use download or upload"}
    size = int(params.get("size_bytes", 1 << 20))
    key = params.get("key") or f"chunk-{size}"
    bucket = params.get("bucket", "faasprof-io")
    store, transfer = iolib.store_from_params(params)
    local_dir = params.get("local_dir", "/tmp")
    local = os.path.join(local_dir, f"io-object-{uuid.uuid4().hex}")
    bd = iolib.Breakdown()
    if params.get("prepare") and op == "download":
        with bd.phase("setup"):
            if store.head_size(bucket, key) != size:
                store.create_bucket(bucket)
                store.put_stream(bucket, key, iolib.PatternReader(size, seed=key), size)
    try:
        if op == "download":
            with bd.phase("disk"):
                handle = open(local, "wb")
            with handle:

                def sink(piece):
                    with bd.phase("disk"):
                        handle.write(piece)
                    bd.add_bytes("disk_write", len(piece))

                with bd.phase(transfer):
                    moved = store.get(bucket, key, sink=sink)
                with bd.phase("disk"):
                    handle.flush()
                    os.fsync(handle.fileno())
            bd.add_bytes("network_in" if transfer == "network" else "disk_read", moved)
        else:
            with bd.phase("compute"):
                reader = iolib.PatternReader(size, seed=key)
            with open(local, "wb") as handle, bd.phase("disk"):
                while piece := reader(iolib.STREAM_BYTES):
                    handle.write(piece)
                handle.flush()
                os.fsync(handle.fileno())
            bd.add_bytes("disk_write", size)
            with open(local, "rb") as handle:

                def read(n):
                    with bd.phase("disk"):
                        piece = handle.read(n)
                    bd.add_bytes("disk_read", len(piece))
                    return piece

                with bd.phase(transfer):
                    store.put_stream(bucket, key, read, size)
            moved = size
            bd.add_bytes("network_out" if transfer == "network" else "disk_write", moved)
    finally:
        with bd.phase("disk"):
            if os.path.exists(local):
                os.remove(local)
        if hasattr(store, "close"):
            store.close()
    return bd.result(
        op=op, key=key, size_bytes=size, moved_bytes=moved, complete=moved == size, backend=params.get("backend", "s3")
    )
