"""The function catalogue: manifest entries, names, memory variants, unknown names."""

from __future__ import annotations

import json

import pytest

from faasprof.errors import ConfigError
from faasprof.functions import catalogue
from faasprof.functions.catalogue import RUNNERS_DIR, lookup, names, require

MICROBENCHMARKS = {
    "json_dumps",
    "json_loads",
    "deltablue",
    "pidigits",
    "richards",
    "nbody",
    "float",
    "chaos",
    "fannkuch",
    "spectral_norm",
    "nqueens",
    "regex",
}
APPLICATIONS = {"autocomplete", "markdown", "img-resize", "sentiment", "ocr-img"}


def test_catalogue_holds_the_microbenchmarks_applications_and_spin():
    known = set(names())
    assert MICROBENCHMARKS <= known
    assert APPLICATIONS <= known
    assert "spin" in known
    assert sum(1 for entry in catalogue.entries() if entry.category == "microbenchmark") >= 12
    assert names() == sorted(names())


@pytest.mark.parametrize("name", sorted(MICROBENCHMARKS | APPLICATIONS | {"spin"}))
def test_every_entry_is_complete(name):
    entry = lookup(name)
    assert entry.kind in ("python:3", "nodejs")
    assert (entry.directory / entry.entry).is_file()
    assert entry.memory_mb >= 128 and entry.timeout_ms >= 1000
    assert entry.param_file is not None and entry.param_file.is_file(), "each function ships a sample input"
    json.loads(entry.param_file.read_text())
    if entry.data_file is not None:
        assert entry.data_file.is_file() and entry.data_param
    assert entry.expected(), "each function ships its expected result"
    assert entry.native[0] in ("{python}", "{node}")
    runner = entry.native[1].replace("{runners}", str(RUNNERS_DIR))
    assert (RUNNERS_DIR / runner.split("/")[-1]).is_file()
    if entry.runtime == "python":
        assert entry.entry == "__main__.py"  # what OpenWhisk's Python zip actions need
    else:
        package = json.loads((entry.directory / "package.json").read_text())
        assert package["main"] == entry.entry


def test_node_and_python_functions_are_both_present():
    runtimes = {lookup(name).runtime for name in names()}
    assert runtimes == {"python", "nodejs"}
    assert lookup("autocomplete").runtime == "nodejs" and lookup("markdown").runtime == "python"


def test_memory_variant_is_the_same_code_with_another_limit():
    base = lookup("markdown")
    variant = lookup("markdown-256")
    assert variant.name == "markdown-256" and variant.base == "markdown"
    assert variant.memory_mb == 256
    assert variant.directory == base.directory and variant.entry == base.entry
    hyphenated = lookup("img-resize-1024")
    assert hyphenated.base == "img-resize" and hyphenated.memory_mb == 1024
    assert lookup("img-resize").memory_mb == 512  # the base itself is not mistaken for a variant


@pytest.mark.parametrize("name", ["nope", "markdown-", "markdown-5", "markdown-999999", "json-256", ""])
def test_unknown_names_are_none(name):
    assert lookup(name) is None


def test_require_lists_the_known_functions():
    with pytest.raises(ConfigError) as caught:
        require("jsondumps", where="FUNCTION")
    message = str(caught.value)
    assert "jsondumps" in message
    for name in ("json_dumps", "markdown", "ocr-img", "spin"):
        assert name in message


def test_sample_params_carry_the_data_file_base64():
    params = lookup("img-resize").sample_params()
    assert params["sizes"] == [16, 32, 48, 64, 128]
    import base64

    assert base64.b64decode(params["image"]).startswith(b"\x89PNG")


def test_missing_npm_package_makes_only_that_function_unavailable(tmp_path):
    from dataclasses import replace

    entry = replace(lookup("img-resize"), directory=tmp_path)
    problems = entry.missing()
    assert problems and "jimp" in problems[0] and "python -m faasprof.functions.package img-resize" in problems[0]
    assert not entry.available
    assert lookup("markdown").available


def test_a_function_needing_a_binary_finds_it_where_the_storage_servers_do(tmp_path, monkeypatch):
    # iperf3 in $GOBIN (or the venv's bin, ~/go/bin) runs the storage servers; the catalogue once
    # looked only on PATH, /usr/bin and /usr/local/bin, and called io-net unavailable.
    (tmp_path / "bin").mkdir()
    (tmp_path / "gobin").mkdir()
    tool = tmp_path / "gobin" / "iperf3"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("GOBIN", str(tmp_path / "gobin"))
    assert catalogue.find_binary("iperf3") == str(tool)
    assert not [line for line in lookup("io-net").missing() if "iperf3" in line]
