"""Every catalogue function given real-world inputs of its kind, run natively in its own runner.

The sample inputs prove the happy path; users bring other documents, images and parameters:
a README full of badges (an image inside a link, ``# T [![B](u)](v)``, crashed ``markdown`` with
an IndexError), sizes typed as strings by a CLI, nulls from a param file, a JPEG where a PNG was
expected. Each function must answer them: a result, or an application error whose one-line
message names the parameter, never an exception escaping the function (the runner would report
it as ``IndexError: ...``) and never a dead worker.
"""

from __future__ import annotations

import base64
import io
import re
import time
from pathlib import Path

import pytest

from faasprof.functions.catalogue import lookup

REPO = Path(__file__).resolve().parent.parent
PYTHON_EXCEPTION = re.compile(r"^[A-Z]\w*(Error|Exception|Exit|Interrupt)\b")


def call(workers, name, params, timeout_s=60):
    return workers(name).call(params, timeout_s=timeout_s)


def ok(workers, name, params, timeout_s=60):
    answer = call(workers, name, params, timeout_s)
    assert answer["ok"], answer.get("error")
    return answer["result"]


def refused(workers, name, params, parameter):
    """An application error with a message naming ``parameter``, not an escaped exception."""
    answer = call(workers, name, params)
    assert not answer["ok"]
    assert not PYTHON_EXCEPTION.match(answer["error"]), answer["error"]
    assert parameter in answer["error"], answer["error"]
    assert "\n" not in answer["error"]
    return answer["error"]


# --------------------------------------------------------------------------------------------
# microbenchmarks: the size as CLIs and param files send it

SIZES = {  # function -> (a small size, the result key that echoes it)
    "json_dumps": (10, "size"),
    "json_loads": (10, "size"),
    "deltablue": (20, "size"),
    "pidigits": (50, "size"),
    "richards": (10, "size"),
    "nbody": (100, "size"),
    "float": (100, "size"),
    "chaos": (100, "size"),
    "fannkuch": (5, "size"),
    "spectral_norm": (10, "size"),
    "nqueens": (6, "size"),
    "regex": (20, "size"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIZES))
def test_size_as_a_string_a_float_or_null(workers, name):
    size, key = SIZES[name]
    reference = ok(workers, name, {"size": size})
    assert reference[key] == size
    assert ok(workers, name, {"size": str(size)}) == reference  # wsk -p size '"10"'
    assert ok(workers, name, {"size": float(size)}) == reference  # a JavaScript client's number
    assert ok(workers, name, {"size": f" {size} "}) == reference
    default = ok(workers, name, {})
    assert ok(workers, name, {"size": None}) == default  # a param file's null: the default


@pytest.mark.parametrize("name", sorted(SIZES))
@pytest.mark.parametrize("bad", ["abc", -3, 2.5, True, [1], {"n": 1}, 10**30, "nan", "1e400"])
def test_a_size_that_is_no_whole_number_in_range_is_refused_by_name(workers, name, bad):
    message = refused(workers, name, {"size": bad}, "size")
    assert "expected a whole number from" in message


@pytest.mark.parametrize(
    "name, size",
    [("deltablue", 0), ("float", 0), ("fannkuch", 0), ("spectral_norm", 0), ("richards", 0), ("fannkuch", 13)],
)
def test_sizes_that_crashed_or_never_ended_are_refused(workers, name, size):
    # deltablue 0: AttributeError; float 0: IndexError; fannkuch 0: IndexError; spectral_norm 0:
    # ZeroDivisionError; richards 0 looped for ever; fannkuch 13 would run for hours.
    refused(workers, name, {"size": size}, "size")


def test_json_loads_repeat_and_chaos_seed_are_validated_too(workers):
    assert ok(workers, "json_loads", {"size": 5, "repeat": "3"})["records_parsed"] == 15
    refused(workers, "json_loads", {"size": 5, "repeat": "x"}, "repeat")
    assert ok(workers, "chaos", {"size": 500, "seed": "7"}) == ok(workers, "chaos", {"size": 500, "seed": 7})
    refused(workers, "chaos", {"size": 500, "seed": 1.5}, "seed")


# --------------------------------------------------------------------------------------------
# markdown: documents as they are found in repositories

BADGES = (
    "# faasprof [![CI](https://ci.example.org/badge.svg)](https://ci.example.org/run) "
    "[![License: MIT](https://img.shields.io/badge/License-MIT-yellow.svg)](https://opensource.org/licenses/MIT)\n\n"
    "[![Docs](https://img.shields.io/badge/docs-latest-blue.svg)](https://example.org/docs)\n"
)

README = """\
<p align="center"><img src="docs/logo.png" width="200" alt="logo"></p>

A *serverless* profiler.\r
Install with `pip install faasprof` and see [the guide][guide] or the [Go article](https://en.wikipedia.org/wiki/Go_(game)).\r

| column | meaning |
|--------|---------|
| `seq`  | index   |

- [x] done task
- [ ] open task
\t- tabbed nested item

> quoted
> > nested quote with **bold** and a link <https://example.org/a_b>

1) first
2) second

```
unclosed fence keeps <html> literal
"""


def test_an_image_inside_a_link_renders_as_a_linked_image(workers):
    result = ok(workers, "markdown", {"text": "# T [![B](u)](v)"})
    assert result["html"] == '<h1>T <a href="v"><img src="u" alt="B" /></a></h1>\n'
    result = ok(workers, "markdown", {"text": BADGES})
    assert result["elements"]["a"] == 3 and result["elements"]["img"] == 3
    assert (
        '<a href="https://ci.example.org/run"><img src="https://ci.example.org/badge.svg" alt="CI" /></a>'
        in result["html"]
    )


def test_a_typical_readme(workers):
    result = ok(workers, "markdown", {"markdown": base64.b64encode(README.encode()).decode()})
    out = result["html"]
    assert "&lt;p align=&quot;center&quot;&gt;" in out or '&lt;p align="center"&gt;' in out  # raw HTML escaped
    assert '<a href="https://en.wikipedia.org/wiki/Go_(game)">Go article</a>' in out
    assert "<code>pip install faasprof</code>" in out and "\r" not in out
    assert '<a href="https://example.org/a_b">' in out
    assert out.count("<blockquote>") == 2
    assert "unclosed fence keeps &lt;html&gt; literal" in out


@pytest.mark.parametrize("path", ["README.md", "faasprof/localwhisk/README.md", "setup/README.md"])
def test_this_repositorys_own_documents(workers, path):
    text = (REPO / path).read_text(encoding="utf-8")
    result = ok(workers, "markdown", {"text": text})
    assert result["markdown_bytes"] == len(text.encode()) and result["elements"]["h1"] + result["elements"]["h2"] >= 1


@pytest.mark.parametrize(
    "text",
    [
        "[" * 20000,  # each unclosed bracket used to rescan the rest: seconds of work
        "![x" * 5000,
        "[a](b" * 5000,
        "<http://" * 5000,
        ">" * 2000 + " deep",  # RecursionError before nesting was bounded
        "\x00\x001\x00 NUL in the text",
        "",
    ],
)
def test_hostile_documents_end_quickly(workers, text):
    started = time.monotonic()
    result = ok(workers, "markdown", {"text": text})
    assert time.monotonic() - started < 10.0
    assert "\x00" not in result["html"]


def test_markdown_refuses_a_document_that_is_not_text(workers):
    refused(workers, "markdown", {"markdown": None}, "markdown")
    refused(workers, "markdown", {"text": None}, "text")


# --------------------------------------------------------------------------------------------
# sentiment, autocomplete, spin: text and numbers as people type them


@pytest.mark.parametrize(
    "text, label",
    [
        ("Ünïcödé reviews are GREAT!!! 👍 Love it.", "positive"),
        ("<p>The support was <b>terrible</b> and the box arrived broken.</p>", "negative"),
        ("NOT GOOD. Not bad either.", None),
        ("x" * 100_000, "neutral"),
    ],
)
def test_sentiment_of_real_reviews(workers, text, label):
    result = ok(workers, "sentiment", {"analyse": text})
    assert result["label"] in ("positive", "negative", "neutral")
    if label:
        assert result["label"] == label


def test_sentiment_without_text_is_refused(workers):
    for params in ({"text": ""}, {"text": None}, {"analyse": 42}):
        refused(workers, "sentiment", params, "text")


def test_autocomplete_as_users_type(workers):
    lower = ok(workers, "autocomplete", {"term": "uni"})
    assert ok(workers, "autocomplete", {"term": "UNI"})["suggestions"] == lower["suggestions"]
    assert ok(workers, "autocomplete", {"term": "uni", "limit": "2"})["suggestions"] == lower["suggestions"][:2]
    assert ok(workers, "autocomplete", {"term": "ü"})["matches"] >= 0
    assert ok(workers, "autocomplete", {"term": "(*["})["matches"] == 0  # not a pattern
    assert ok(workers, "autocomplete", {"term": "uni", "limit": 0})["suggestions"] == []
    refused(workers, "autocomplete", {"term": None}, "term")
    for limit in ("abc", -1, 2.5, 10**9):
        refused(workers, "autocomplete", {"term": "uni", "limit": limit}, "limit")


def test_spin_numbers_as_strings_and_absurd_ones(workers):
    result = ok(workers, "spin", {"service_ms": "2", "payload_bytes": "4"})
    assert result["payload"] == "xxxx" and result["elapsed_ms"] >= 2
    for params in ({"service_ms": float("nan")}, {"service_ms": 1e20}, {"payload_bytes": 10**12}):
        refused(workers, "spin", params, "service_ms")


# --------------------------------------------------------------------------------------------
# images: other formats and shapes than the sample PNG


def _encoded(image, fmt, **save):
    from PIL import Image  # noqa: F401  (Pillow is a test dependency through matplotlib)

    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **save)
    return base64.b64encode(buffer.getvalue()).decode()


def _sample_image():
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(lookup("img-resize").sample_params()["image"])))


@pytest.mark.parametrize(
    "fmt, convert",
    [("JPEG", "RGB"), ("PNG", "L"), ("PNG", "P"), ("PNG", "RGBA"), ("BMP", "RGB"), ("GIF", "P")],
)
def test_img_resize_other_formats_and_colour_modes(workers, fmt, convert):
    image = _encoded(_sample_image().convert(convert), fmt)
    result = ok(workers, "img-resize", {"image": image, "sizes": ["16", 48.0]})
    assert [icon["width"] for icon in result["icons"]] == [16, 48]
    assert result["source"]["width"] == 512 and result["source"]["height"] == 384


def test_img_resize_tiny_image_upscaled_and_absurd_sizes_refused(workers):
    from PIL import Image

    one = _encoded(Image.new("RGB", (1, 1), (255, 0, 0)), "PNG")
    assert ok(workers, "img-resize", {"image": one, "sizes": [32]})["icons"][0]["width"] == 32
    for sizes in ([0], [-5], [100000], ["big"]):
        refused(workers, "img-resize", {"image": one, "sizes": sizes}, "sizes")
    refused(workers, "img-resize", {"image": "bm90IGFuIGltYWdl", "sizes": [8]}, "image")


def test_ocr_reads_the_sample_as_jpeg_and_a_blank_page_is_empty(workers):
    from PIL import Image

    sample = base64.b64decode(lookup("ocr-img").sample_params()["image"])
    jpeg = _encoded(Image.open(io.BytesIO(sample)).convert("RGB"), "JPEG", quality=95)
    words = ok(workers, "ocr-img", {"image": jpeg}, timeout_s=120)["words"]
    assert "Serverless" in words and "benchmark" in words
    blank = _encoded(Image.new("L", (200, 80), 255), "PNG")
    assert ok(workers, "ocr-img", {"image": blank}, timeout_s=120)["words"] == []
