"""The shipped workloads reached by bare name from any folder, and ``faasprof examples`` (list and
copy, never overwriting); a path that does not exist names the shipped workload meant."""

from __future__ import annotations

import json

from faasprof.paths import WORKLOAD_CONFIGS_DIR
from faasprof.workload import shipped
from tests.helpers import run_cli


def test_a_bare_name_is_the_shipped_workload_from_any_folder_and_a_file_here_wins(tmp_path):
    done = run_cli("validate", "--offline", "paper_listing1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{WORKLOAD_CONFIGS_DIR / 'paper_listing1.json'}: ok")
    planned = run_cli("plan", "paper_listing1.json", "--out", tmp_path / "s.csv", cwd=tmp_path)
    assert planned.returncode == 0 and (tmp_path / "s.csv").is_file(), planned.stderr
    # A file of that name in the current folder is read, as a path always was.
    (tmp_path / "paper_listing1.json").write_text("{")
    mine = run_cli("validate", "--offline", "paper_listing1.json", cwd=tmp_path)
    assert mine.returncode == 2 and mine.stderr.startswith("paper_listing1.json: ")


def test_a_missing_path_names_the_shipped_workload_meant(tmp_path):
    cases = (
        (
            "workload_configs/first_run_modes.json",
            "workload_configs/first_run_modes.json: no such file; faasprof ships first_run_modes: name it bare "
            "(faasprof run first_run_modes), or copy it here with faasprof examples copy first_run_modes",
        ),
        (
            "first_run_mode",
            "first_run_mode: no such file; check the path, or did you mean the shipped workload first_run_modes? "
            "(faasprof examples lists them)",
        ),
        (
            "mine/nothing.json",
            "mine/nothing.json: no such file; check the path of the workload (faasprof examples lists the shipped "
            "ones, which run by bare name)",
        ),
    )
    # validate takes several files (one line each); run reads its one as validate does.
    done = run_cli("validate", "--offline", *(given for given, _ in cases), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines() == [expected for _, expected in cases], done.stderr
    done = run_cli("run", cases[0][0], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines() == [cases[0][1]], done.stderr


def test_examples_lists_each_shipped_workload_with_a_line_of_description():
    done = run_cli("examples")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    names = [line.split()[0] for line in lines[:-1]]
    assert names == sorted(p.stem for p in WORKLOAD_CONFIGS_DIR.glob("*.json") if p.name != "schema.json")
    listing = next(line for line in lines if line.startswith("paper_listing1 "))
    assert "Listing 1 of the MICRO'19 FaaSProfiler paper" in listing and len(listing) < 160
    assert lines[-1].startswith(f"{len(names)} workloads; run one by name")


def test_examples_copy_writes_the_shipped_file_and_never_overwrites(tmp_path):
    done = run_cli("examples", "copy", "paper_listing1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    copied = tmp_path / "paper_listing1.json"
    assert copied.read_bytes() == (WORKLOAD_CONFIGS_DIR / "paper_listing1.json").read_bytes()
    copied.write_text('{"mine": true}')
    again = run_cli("examples", "copy", "paper_listing1", cwd=tmp_path)
    assert again.returncode == 2 and again.stderr.splitlines() == [
        "paper_listing1.json: exists; faasprof examples copy never overwrites: name another DEST or remove it"
    ]
    assert json.loads(copied.read_text()) == {"mine": True}
    (tmp_path / "into").mkdir()
    assert run_cli("examples", "copy", "paper_listing1.json", "into", cwd=tmp_path).returncode == 0
    assert (tmp_path / "into" / "paper_listing1.json").is_file()
    unknown = run_cli("examples", "copy", "paper_listing", cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.stderr.splitlines() == [
        "paper_listing: no shipped workload of that name; did you mean paper_listing1? faasprof examples lists them"
    ]


def test_find_workload_keeps_paths_and_existing_files():
    assert shipped.find_workload("first_run_modes") == WORKLOAD_CONFIGS_DIR / "first_run_modes.json"
    assert str(shipped.find_workload("some/first_run_modes.json")) == "some/first_run_modes.json"
    assert shipped.find_workload("schema") == shipped.Path("schema")  # the schema is not a workload
