"""faasprof.localwhisk.fastjson gives the standard library's answers, including where orjson alone would not."""

from __future__ import annotations

import json
import math

import pytest

from faasprof.localwhisk import fastjson


def _std_dumps(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"a": 1, "b": [1, 2.5, "x"], "c": {"d": True, "e": False}},
        {"text": 'é ✓ \u2028 \x00 \x1f " \\ /'},
        {"none": None},
        [float("nan")],
        {"inf": float("inf"), "minus": float("-inf")},
        {"big": 2**64 + 1, "negative": -(2**70)},
        {"u64": 2**64 - 1, "i64": -(2**63)},
    ],
)
def test_dumps_decodes_to_what_json_dumps_decodes_to(obj):
    ours = fastjson.dumps(obj)
    std = _std_dumps(obj)
    assert json.loads(ours) == json.loads(std) or _nan_equal(json.loads(ours), json.loads(std))
    if b"NaN" in std or b"Infinity" in std:
        assert ours == std  # never orjson's null in place of a non-finite float


def _nan_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_nan_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_nan_equal(a[k], b[k]) for k in a)
    return a == b


def test_dumps_keeps_null_and_integer_keys_as_json_does():
    assert fastjson.dumps({"x": None}) == b'{"x":null}'
    assert fastjson.dumps({1: "a"}) == _std_dumps({1: "a"})  # orjson refuses non-string keys


def test_dumps_replaces_a_lone_surrogate_that_utf8_cannot_carry():
    # json.dumps(...).encode("utf-8") raised UnicodeEncodeError here, which stopped store writes (issue 44).
    assert fastjson.dumps({"s": "\ud800", "k\udc00": None}) == '{"s":"\ufffd","k\ufffd":null}'.encode()


def test_loads_replaces_lone_surrogates_and_keeps_pairs():
    assert fastjson.loads(b'{"s":"\\ud800x","p":"\\ud83d\\ude00","l":["\\udc00"]}') == {
        "s": "\ufffdx",
        "p": "\U0001f600",
        "l": ["\ufffd"],
    }


@pytest.mark.parametrize(
    "text",
    [
        b"{}",
        b'{"a":1,"a":2}',
        b'{"big":123456789012345678901234567890}',
        b'{"u64":18446744073709551615,"i64":-9223372036854775808}',
        b'{"f":1.5e-7,"g":1e16,"h":-0.0}',
        b"[NaN, Infinity, -Infinity]",
        b"[1E400]",
        '{"str": "é"}',
    ],
)
def test_loads_equals_json_loads(text):
    ours, std = fastjson.loads(text), json.loads(text)
    assert _nan_equal(ours, std)
    assert type(ours) is type(std)
    if isinstance(std, dict) and "big" in std:
        assert isinstance(ours["big"], int)  # orjson alone would give a float


@pytest.mark.parametrize("text", [b"{", b"", b"[1,]", b"\xff\xfe", b"nul"])
def test_loads_raises_json_s_error(text):
    with pytest.raises(ValueError) as ours:
        fastjson.loads(text)
    with pytest.raises(ValueError) as std:
        json.loads(text)
    assert str(ours.value) == str(std.value)
