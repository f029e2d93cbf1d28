"""Each function, run natively with its sample input, returns its expected result; and known
values of the classic benchmarks at other sizes (figures published for these algorithms, or
computed here by a different method)."""

from __future__ import annotations

import pytest

from faasprof.experiments import native
from faasprof.functions.catalogue import lookup, names
from faasprof.functions.checks import check_result


def _entry_or_skip(name):
    entry = lookup(name)
    missing = entry.missing()
    if missing:
        pytest.skip(missing[0])
    return entry


@pytest.mark.parametrize("name", names())
def test_sample_input_gives_the_expected_result(name):
    entry = _entry_or_skip(name)
    answer = native.call_once(entry)
    assert answer["ok"], answer.get("error")
    assert answer["exec_ns"] > 0 and answer["cold"] is True
    assert check_result(answer["result"], entry.expected()) == []


def _call(workers, name, params):
    answer = workers(name).call(params, timeout_s=60)
    assert answer["ok"], answer.get("error")
    return answer["result"]


def machin_pi_digits(count):
    """pi = 16 atan(1/5) - 4 atan(1/239), in integers with 10 guard digits (not the spigot)."""
    scale = 10 ** (count + 10)

    def arctan_inverse(x):
        total = term = scale // x
        x2, n, sign = x * x, 1, 1
        while term:
            term //= x2
            n += 2
            sign = -sign
            total += sign * (term // n)
        return total

    pi = 4 * (4 * arctan_inverse(5) - arctan_inverse(239))
    return str(pi)[:count]


def test_pidigits_agrees_with_machins_formula(workers):
    result = _call(workers, "pidigits", {"size": 2000})
    digits = machin_pi_digits(2000)
    assert result["first20"] == digits[:20] and result["last20"] == digits[-20:]
    assert result["digit_sum"] == sum(map(int, digits))


@pytest.mark.parametrize(
    "name,params,expected",
    [
        ("nbody", {"size": 1000}, {"equals": {"energy_before": -0.169075164, "energy_after": -0.169087605}}),
        ("spectral_norm", {"size": 100}, {"equals": {"norm": 1.274219991}}),
        ("fannkuch", {"size": 7}, {"equals": {"checksum": 228, "max_flips": 16, "permutations": 5040}}),
        ("nqueens", {"size": 8}, {"equals": {"solutions": 92}}),
        ("nqueens", {"size": 6}, {"equals": {"solutions": 4}}),
        ("richards", {"size": 1000}, {"equals": {"queue_count": 2322, "hold_count": 928}}),
        ("deltablue", {"size": 50}, {"equals": {"chain_checks": 100, "projection_checks": 100}}),
        ("json_dumps", {"size": 10}, {"equals": {"roundtrip_ok": True, "size": 10}}),
        ("json_loads", {"size": 10, "repeat": 2}, {"equals": {"records_parsed": 20}}),
        ("regex", {"size": 30}, {"equals": {"dates": 30, "emails": 10, "urls": 6, "substitutions": 10}}),
        ("float", {"size": 3}, {"approx": {"max.1": [1.0, 1e-12]}}),
        ("chaos", {"size": 1}, {"equals": {"pixels_hit": 1}}),
    ],
)
def test_known_values_at_other_sizes(workers, name, params, expected):
    assert check_result(_call(workers, name, params), expected) == []


def test_spin_is_cold_then_warm_in_one_instance(workers):
    first = _call(workers, "spin", {"service_ms": 5, "payload_bytes": 3})
    second = _call(workers, "spin", {"service_ms": 15})
    assert first["cold"] is True and second["cold"] is False
    assert first["instance_id"] == second["instance_id"] and second["invocation_count"] == 2
    assert first["payload"] == "xxx" and second["payload"] == ""
    assert second["elapsed_ms"] >= 15 and second["spins"] > 0
    assert second["cgroup"]["version"] in (1, 2, None)


def test_spin_draws_each_service_time_from_percentiles_and_holds_memory(workers):
    percentiles = [[0, 1.0], [50, 2.0], [100, 8.0]]
    drawn = [_call(workers, "spin", {"service_ms_percentiles": percentiles, "alloc_mb": 8}) for _ in range(12)]
    times = [answer["service_ms"] for answer in drawn]
    assert all(1.0 <= t <= 8.0 for t in times) and len(set(times)) > 1  # drawn per call, not one value
    assert all(answer["alloc_mb"] == 8 and answer["elapsed_ms"] >= answer["service_ms"] - 0.001 for answer in drawn)
    bad = workers("spin").call({"service_ms_percentiles": [[0]]}, timeout_s=30)
    assert not bad["ok"] and "service_ms_percentiles" in bad["error"]


def test_spin_rejects_negative_times(workers):
    answer = workers("spin").call({"service_ms": -1}, timeout_s=30)
    assert not answer["ok"] and ">= 0" in answer["error"]


def test_markdown_from_plain_text(workers):
    result = _call(workers, "markdown", {"text": "Title\n=====\n\n* a *b*\n* `c<d>`\n\n3. x\n4. y\n"})
    assert result["html"] == (
        "<h1>Title</h1>\n<ul>\n<li>a <em>b</em></li>\n<li><code>c&lt;d&gt;</code></li>\n</ul>\n"
        '<ol start="3">\n<li>x</li>\n<li>y</li>\n</ol>\n'
    )


def test_markdown_rejects_bad_base64(workers):
    answer = workers("markdown").call({"markdown": "!!!not base64"}, timeout_s=30)
    assert not answer["ok"] and "base64" in answer["error"]


@pytest.mark.parametrize(
    "text,label",
    [
        ("This was a terrible, awful experience. Support was rude.", "negative"),
        ("The box is grey. It has four ports.", "neutral"),
        ("It is not bad at all.", "positive"),
    ],
)
def test_sentiment_labels(workers, text, label):
    assert _call(workers, "sentiment", {"text": text})["label"] == label


def test_autocomplete_limit_and_missing_term(workers):
    first = _call(workers, "autocomplete", {"term": "zz"})
    result = _call(workers, "autocomplete", {"term": "s", "limit": 3})
    assert first["index_loaded_now"] is True and result["index_loaded_now"] is False  # loaded once per process
    assert first["matches"] == 0 and first["suggestions"] == []
    assert len(result["suggestions"]) == 3 and result["matches"] > 3
    assert all(s.lower().startswith("s") for s in result["suggestions"])
    answer = workers("autocomplete").call({}, timeout_s=30)
    assert not answer["ok"] and "term" in answer["error"]


def test_img_resize_without_an_image_is_an_application_error(workers):
    answer = workers("img-resize").call({"sizes": [8]}, timeout_s=30)
    assert not answer["ok"] and "no image" in answer["error"]


def test_img_resize_accepts_the_data_parameter(workers):
    params = lookup("img-resize").sample_params()
    result = _call(workers, "img-resize", {"data": params["image"], "sizes": [10], "return_images": True})
    assert result["icons"][0]["width"] == 10 and result["icons"][0]["png_base64"]
