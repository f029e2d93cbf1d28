"""io-image: an image pipeline over storage (FunctionBench's image processing with storage):
fetch grey-scale images (binary PGM) from the store, apply effects in pure Python, write each
intermediate to local disk and read it back for the next effect, and upload the results.

Input: ``backend``/``s3``/``shared_dir``/``bucket`` as io-object; ``prefix`` of the input images
(default ``images/``); ``count`` images of ``width`` x ``height`` (default 2 of 96x96);
``effects`` in order, from invert, blur (3x3 box), edges (Sobel magnitude), threshold (default
all four); ``prepare``: generate missing inputs first (``setup_ms``); ``local_dir`` (default /tmp).
Output: images done, their keys under ``results/``, a checksum of the results, the breakdown.
"""

import os
import uuid

import iolib

EFFECTS = ("invert", "blur", "edges", "threshold")


def encode_pgm(width, height, pixels):
    return b"P5\n%d %d\n255\n" % (width, height) + bytes(pixels)


def decode_pgm(data):
    parts = data.split(b"\n", 3)
    if parts[0] != b"P5" or len(parts) < 4:
        raise ValueError("not a binary PGM (P5) image")
    width, height = (int(x) for x in parts[1].split())
    return width, height, bytearray(parts[3][: width * height])


def synthetic_image(width, height, seed):
    """Rings and a gradient, so every effect has edges to find."""
    cx, cy = width // 2 + seed % 7, height // 2 - seed % 5
    return bytearray(
        (((x - cx) ** 2 + (y - cy) ** 2) // (8 + seed % 4) + x) % 256 for y in range(height) for x in range(width)
    )


def apply(effect, width, height, px):
    if effect == "invert":
        return bytearray(255 - p for p in px)
    if effect == "threshold":
        return bytearray(255 if p >= 128 else 0 for p in px)
    out = bytearray(px)
    for y in range(1, height - 1):
        row = y * width
        for x in range(1, width - 1):
            i = row + x
            if effect == "blur":
                out[i] = (
                    px[i - width - 1]
                    + px[i - width]
                    + px[i - width + 1]
                    + px[i - 1]
                    + px[i]
                    + px[i + 1]
                    + px[i + width - 1]
                    + px[i + width]
                    + px[i + width + 1]
                ) // 9
            else:  # edges: |Sobel x| + |Sobel y|, clipped
                gx = (px[i - width + 1] + 2 * px[i + 1] + px[i + width + 1]) - (
                    px[i - width - 1] + 2 * px[i - 1] + px[i + width - 1]
                )
                gy = (px[i + width - 1] + 2 * px[i + width] + px[i + width + 1]) - (
                    px[i - width - 1] + 2 * px[i - width] + px[i - width + 1]
                )
                out[i] = min(255, abs(gx) + abs(gy))
    return out


def main(params):
    effects = params.get("effects") or list(EFFECTS)
    unknown = [e for e in effects if e not in EFFECTS]
    if unknown:
        return {"error": f"effect {unknown[0]!r}: use {', '.join(EFFECTS)}"}
    bucket = params.get("bucket", "faasprof-io")
    prefix = params.get("prefix", "images/")
    count = int(params.get("count", 2))
    width, height = int(params.get("width", 96)), int(params.get("height", 96))
    local_dir = params.get("local_dir", "/tmp")
    store, transfer = iolib.store_from_params(params)
    keys = [f"{prefix}{index:04d}.pgm" for index in range(count)]
    bd = iolib.Breakdown()
    if params.get("prepare"):
        with bd.phase("setup"):
            store.create_bucket(bucket)
            for index, key in enumerate(keys):
                if store.head_size(bucket, key) != len(encode_pgm(width, height, b"")) + width * height:
                    store.put(bucket, key, encode_pgm(width, height, synthetic_image(width, height, index)))
    work = os.path.join(local_dir, f"io-image-{uuid.uuid4().hex}")
    with bd.phase("disk"):
        os.makedirs(work)
    results, checksum = [], 0
    try:
        for key in keys:
            with bd.phase(transfer):
                data = store.get(bucket, key)
            bd.add_bytes("network_in" if transfer == "network" else "disk_read", len(data))
            with bd.phase("compute"):
                w, h, px = decode_pgm(data)
            for step, effect in enumerate(effects):
                with bd.phase("compute"):
                    px = apply(effect, w, h, px)
                    encoded = encode_pgm(w, h, px)
                path = os.path.join(work, f"{step}-{effect}.pgm")
                with bd.phase("disk"):
                    with open(path, "wb") as handle:
                        handle.write(encoded)
                    with open(path, "rb") as handle:
                        encoded = handle.read()
                bd.add_bytes("disk_write", len(encoded))
                bd.add_bytes("disk_read", len(encoded))
                with bd.phase("compute"):
                    w, h, px = decode_pgm(encoded)
            out_key = "results/" + key[len(prefix) :] if key.startswith(prefix) else "results/" + key
            with bd.phase(transfer):
                store.put(bucket, out_key, encoded)
            bd.add_bytes("network_out" if transfer == "network" else "disk_write", len(encoded))
            with bd.phase("compute"):
                checksum = (checksum + sum(px)) % (1 << 32)
            results.append(out_key)
    finally:
        with bd.phase("disk"):
            for name in os.listdir(work):
                os.remove(os.path.join(work, name))
            os.rmdir(work)
        if hasattr(store, "close"):
            store.close()
    return bd.result(images=len(results), results=results, effects=effects, checksum=checksum)
