"""JSON on the invoke path: orjson where it gives the standard library's answer, else ``json``.

orjson encodes an activation record about 15 times faster than ``json.dumps`` and parses a reply
about 10 times faster (bench/bench_localwhisk.py), but differs on a few values; those take the
standard library's path so that what clients, sandboxes and the store see does not change:

- encoding: orjson writes ``null`` for NaN and the infinities where ``json`` writes ``NaN`` and
  ``Infinity``; an output containing ``null`` is therefore encoded again with ``json``. orjson
  refuses integers beyond 64 bits, non-string keys and lone surrogates: ``json`` then decides
  (raising what it raised before).
- decoding: orjson turns integers beyond 64 bits into floats; a text with a run of 19 or more
  digits is parsed by ``json``. orjson refuses ``NaN``, ``Infinity``, numbers beyond the double
  range, lone surrogates and non-UTF-8 texts: ``json`` then decides (accepting or raising its own
  ``ValueError``, whose message the API passes on).

Lone surrogates (``"\\udc00"`` in a JSON text: valid JSON, but no UTF-8 can carry it) are replaced by
U+FFFD wherever a text is parsed here (request bodies, sandbox replies, stored records), and
``dumps`` replaces any left in a value it is given (a header decoded with ``surrogateescape``), so
such text never stops a store write, a sandbox message or a response (issue 44).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(rb"\d{19}")
# Any surrogate code point left in a Python str is unpaired: json.loads joins escaped pairs.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def scrub_text(text: str) -> str:
    """``text`` with every unpaired surrogate replaced by U+FFFD (the text UTF-8 can carry)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def scrub(obj: object) -> object:
    """``obj`` (parsed JSON) with unpaired surrogates replaced in every string and key."""
    if isinstance(obj, str):
        return scrub_text(obj) if _SURROGATE.search(obj) else obj
    if isinstance(obj, dict):
        return {scrub(key): scrub(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(item) for item in obj]
    return obj


def dumps(obj: object) -> bytes:
    """Compact UTF-8 JSON of the same value as ``json.dumps(obj, ensure_ascii=False,
    separators=(",", ":"))`` (a float may be spelled differently: ``1e-7`` for ``1e-07``);
    unpaired surrogates become U+FFFD."""
    try:
        data = orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError: big ints, non-str keys, surrogates
        return _std_dumps(obj)
    if b"null" in data:  # None, or a non-finite float orjson turned into null
        return _std_dumps(obj)
    return data


def _std_dumps(obj: object) -> bytes:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate: UTF-8 cannot carry it
        return scrub_text(text).encode("utf-8")


def loads(data: bytes | str) -> Any:
    """``json.loads(data)``, through orjson when the result is the same; unpaired surrogates
    (which orjson refuses) become U+FFFD."""
    if isinstance(data, str):
        raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = data
    if _LONG_DIGITS.search(raw) is None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return scrub(json.loads(data))
