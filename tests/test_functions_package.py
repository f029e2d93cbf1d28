"""Action archives: layout as OpenWhisk expects, reproducible bytes, the build cache, and that an
extracted archive runs."""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from dataclasses import replace

import pytest

from faasprof.errors import NotReadyError
from faasprof.experiments import native
from faasprof.functions.catalogue import lookup
from faasprof.functions.checks import check_result
from faasprof.functions.package import ZIP_EPOCH, archive_files, build_archive, build_archive_bytes, sha256


def _names(data: bytes) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_python_archive_has_main_at_the_root_and_its_data():
    data = build_archive_bytes(lookup("sentiment"))
    names = _names(data)
    assert "__main__.py" in names and "lexicon.tsv" in names
    assert "expected.json" not in names
    assert names == sorted(names)
    for info in zipfile.ZipFile(io.BytesIO(data)).infolist():
        assert info.date_time == ZIP_EPOCH
        assert (info.external_attr >> 16) & 0o777 in (0o644, 0o755)


def test_node_archive_has_package_json_and_its_corpus():
    names = _names(build_archive_bytes(lookup("autocomplete")))
    assert {"package.json", "index.js", "corpus.txt"} <= set(names)


def test_same_inputs_give_the_same_bytes(tmp_path):
    entry = lookup("markdown")
    first = build_archive_bytes(entry)
    assert build_archive_bytes(entry) == first
    # A copy with other timestamps, a byte-code cache and another directory order: same bytes.
    copy = tmp_path / "markdown"
    shutil.copytree(entry.directory, copy)
    for path in copy.iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    assert build_archive_bytes(replace(entry, directory=copy)) == first
    # A changed input changes the archive.
    (copy / "sample.md").write_text("# changed\n")
    assert build_archive_bytes(replace(entry, directory=copy)) != first


def test_cache_is_reused_and_invalidated(tmp_path):
    entry = lookup("json_dumps")
    cache = tmp_path / "build"
    data = build_archive(entry, cache_dir=cache)
    assert (cache / "json_dumps.zip").read_bytes() == data
    assert build_archive(entry, cache_dir=cache) == data
    (cache / "json_dumps.zip").write_bytes(b"corrupt")  # digest no longer matches: rebuilt
    assert build_archive(entry, cache_dir=cache) == data
    assert sha256(data) == sha256(build_archive_bytes(entry))


def test_node_modules_noise_is_left_out():
    entry = lookup("img-resize")
    if entry.packaging_missing():
        pytest.skip(entry.packaging_missing()[0])
    names = [name for name, _ in archive_files(entry)]
    assert any(name.startswith("node_modules/jimp/") for name in names)
    assert not any(name.endswith((".map", ".d.ts")) or "/browser/" in name or "/.bin/" in name for name in names)


@pytest.mark.parametrize("name", ["img-resize", "markdown"])
def test_extracted_archive_runs(tmp_path, name):
    entry = lookup(name)
    if entry.missing():
        pytest.skip(entry.missing()[0])
    zipfile.ZipFile(io.BytesIO(build_archive(entry))).extractall(tmp_path)
    answer = native.call_once(replace(entry, directory=tmp_path), entry.sample_params())
    assert answer["ok"], answer.get("error")
    assert check_result(answer["result"], entry.expected()) == []


def test_missing_npm_package_refuses_to_package(tmp_path):
    shutil.copy(lookup("img-resize").directory / "package.json", tmp_path)
    shutil.copy(lookup("img-resize").directory / "index.js", tmp_path)
    with pytest.raises(NotReadyError, match="npm package jimp is not installed"):
        build_archive_bytes(replace(lookup("img-resize"), directory=tmp_path))
