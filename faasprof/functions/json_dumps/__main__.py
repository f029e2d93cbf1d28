"""json_dumps: serialise a generated document of ``size`` records with the json module.

Input: ``{"size": 2000}`` (records; optional). Output: the size, the length of the JSON text,
its CRC-32 and whether it parses back to the same document.
"""

import json
import zlib

from paramlib import int_param

DEFAULT_SIZE = 2000


def make_document(size):
    """A deterministic document: nested dicts, lists, strings, ints, floats, booleans, nulls."""
    records = []
    for i in range(size):
        records.append(
            {
                "id": i,
                "name": "record-%05d" % i,
                "score": (i * 7919 % 1000) / 8.0,
                "active": i % 3 == 0,
                "parent": None if i % 10 == 0 else i // 10,
                "tags": ["t%d" % (i % 17), "g%d" % (i % 5), "unicode-\u00e9\u4e2d"],
                "point": {"x": i % 101, "y": -(i % 37), "z": (i % 13) * 0.25},
            }
        )
    return {"version": 1, "count": size, "records": records}


def main(args):
    try:
        size = int_param(args, "size", DEFAULT_SIZE, 0, 1000000)
    except ValueError as error:
        return {"error": str(error)}
    document = make_document(size)
    text = json.dumps(document, sort_keys=True)
    return {
        "benchmark": "json_dumps",
        "size": size,
        "bytes": len(text.encode("utf-8")),
        "crc32": zlib.crc32(text.encode("utf-8")),
        "roundtrip_ok": json.loads(text) == document,
    }
