"""The OpenWhisk settings table: every name is one OpenWhisk documents, and the renderer is strict.

The names are checked against the project's research notes on OpenWhisk's deployment
(tests/data/setup/openwhisk_deployment_notes.md, whose provenance tests/data/setup/README.md states), so a typo in
setup/openwhisk_settings.yml cannot silently leave an OpenWhisk default in place.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT

SETUP = REPO_ROOT / "setup"
sys.path.insert(0, str(SETUP))
import openwhisk_vars  # noqa: E402  (setup/ is not a package: the script runs stand-alone)

NOTES = REPO_ROOT / "tests" / "data" / "setup" / "openwhisk_deployment_notes.md"
SHARED_NOTES = REPO_ROOT.parent / "shared" / "research" / "openwhisk.md"


def _section(text: str, start: str, end: str) -> str:
    begin = text.index(start)
    return text[begin : text.index(end, begin)]


def documented_names(text: str) -> set[str]:
    """Identifiers inside backticks, with the notes' shorthand expanded.

    ``limit_action_memory_min/_max/_std`` → the three names; ``CONFIG_whisk_memory_min/max/std`` →
    three names; ``-e scheduler_enable=false`` → ``scheduler_enable``.
    """
    names: set[str] = set()
    for span in re.findall(r"`([^`]+)`", text):
        for token in re.split(r"[\s=,:(){}\"'\[\]]+", span):
            token = token.strip(".-")
            if not token:
                continue
            parts = token.split("/")
            first = parts[0]
            names.add(first)
            stem = first.rsplit("_", 1)[0]
            for part in parts[1:]:
                if part:
                    names.add(stem + part if part.startswith("_") else f"{stem}_{part}")
    return names


def hocon_key(env_name: str) -> str:
    """OpenWhisk's transformEnvironment rule: CONFIG_a_bC_d → a.b-c.d (PascalCase kept)."""
    assert env_name.startswith("CONFIG_")
    parts = env_name[len("CONFIG_") :].split("_")

    def kebab(part: str) -> str:
        if part[:1].isupper():
            return part
        return re.sub(r"([A-Z])", lambda m: "-" + m.group(1).lower(), part)

    return ".".join(kebab(p) for p in parts)


def check_names(settings, notes_text: str) -> list[str]:
    """Problems: names of the table the notes do not document (limits: in §1.5)."""
    limits_text = _section(notes_text, "### 1.5", "### 1.6")
    in_section1 = documented_names(notes_text)
    in_limits = documented_names(limits_text)
    problems = []
    for setting in settings:
        if setting.via == "ansible":
            wanted = in_limits if setting.group == "limits" else in_section1
            if setting.name not in wanted:
                where = "§1.5" if setting.group == "limits" else "§1"
                problems.append(
                    f"{setting.name}: not an OpenWhisk variable named in tests/data/setup/openwhisk_deployment_notes.md {where}"
                )
        else:
            key = hocon_key(setting.name)
            if f"`{key}`" not in limits_text and key not in documented_names(limits_text):
                problems.append(f"{setting.name}: maps to {key}, which §1.5 does not name")
    return problems


@pytest.fixture(scope="module")
def notes_text() -> str:
    return NOTES.read_text(encoding="utf-8")


def test_every_table_name_is_documented_by_openwhisk(notes_text):
    settings = openwhisk_vars.load_table()
    assert len(settings) >= 10
    assert check_names(settings, notes_text) == []


def test_a_misspelled_name_is_caught(notes_text):
    wrong = [
        openwhisk_vars.Setting("limit_invocation_per_minute", "ansible", 1, "limits", "typo"),
        openwhisk_vars.Setting("invoker_usermemory", "ansible", "4096m", "limits", "typo"),
        openwhisk_vars.Setting(
            "CONFIG_whisk_containerProxy_timeout_pauseGrace", "invoker_env", "50 ms", "limits", "typo"
        ),
    ]
    problems = check_names(wrong, notes_text)
    assert len(problems) == 3, problems


def test_name_extraction_expands_the_notes_shorthand(notes_text):
    names = documented_names(notes_text)
    assert {"limit_action_memory_min", "limit_action_memory_max", "limit_action_memory_std"} <= names
    assert {"CONFIG_whisk_memory_min", "CONFIG_whisk_memory_max"} <= names
    assert "scheduler_enable" in names
    assert hocon_key("CONFIG_whisk_containerProxy_timeouts_pauseGrace") == "whisk.container-proxy.timeouts.pause-grace"


@pytest.mark.skipif(not SHARED_NOTES.exists(), reason="the shared research notes are not next to this checkout")
def test_the_copy_of_the_notes_is_current():
    shared = SHARED_NOTES.read_text(encoding="utf-8")
    section = shared[shared.index("## 1. Deployment") : shared.index("## 2. ")]
    assert NOTES.read_text(encoding="utf-8") == section, (
        "re-copy the notes' section 1 as tests/data/setup/README.md says"
    )


def test_defaults_are_the_papers():
    rendered = openwhisk_vars.render(openwhisk_vars.resolve(openwhisk_vars.load_table(), {"invoker_use_runc": False}))
    assert rendered["invoker_user_memory"] == "4096m"
    assert rendered["invoker_extraEnv"]["CONFIG_whisk_containerProxy_timeouts_pauseGrace"] == "50 milliseconds"
    assert rendered["scheduler_enable"] is False
    assert rendered["invoker_use_runc"] is False
    assert rendered["limit_invocations_per_minute"] >= 100000
    assert rendered["controller_extraEnv"] == {}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SETUP / "openwhisk_vars.py"), *args], capture_output=True, text=True, timeout=60
    )


def test_cli_rejects_an_unknown_override_with_a_suggestion():
    result = _run("--allow-auto", "--set", "invoker_user_memroy=8192m")
    assert result.returncode == 2
    assert "invoker_user_memroy" in result.stderr and "did you mean invoker_user_memory" in result.stderr
    assert result.stdout == ""


def test_cli_rejects_memory_max_above_user_memory():
    result = _run("--set", "invoker_use_runc=true", "--set", "invoker_user_memory=1g")
    assert result.returncode == 2
    assert "limit_action_memory_max (2048 MB) exceeds invoker_user_memory (1024 MB)" in result.stderr


def test_cli_requires_auto_to_be_resolved_before_deploying():
    result = _run()
    assert result.returncode == 2
    assert "invoker_use_runc: 'auto' must be resolved" in result.stderr


def test_cli_renders_overrides_into_extra_vars(tmp_path):
    vars_file = tmp_path / "testbed.yml"
    vars_file.write_text("openwhisk_overrides:\n  limit_invocations_concurrent: 5000\n")
    result = _run(
        "--overrides-file",
        str(vars_file),
        "--set",
        "invoker_use_runc=false",
        "--set",
        "invoker_user_memory=8192m",
        "--set",
        "CONFIG_whisk_containerProxy_timeouts_pauseGrace=10 seconds",
    )
    assert result.returncode == 0, result.stderr
    extra = json.loads(result.stdout)
    assert extra["invoker_user_memory"] == "8192m"
    assert extra["limit_invocations_concurrent"] == 5000
    assert extra["invoker_use_runc"] is False
    assert extra["invoker_extraEnv"]["CONFIG_whisk_containerProxy_timeouts_pauseGrace"] == "10 seconds"


def test_print_overrides_merges_file_then_flags(tmp_path):
    vars_file = tmp_path / "testbed.yml"
    vars_file.write_text("openwhisk_overrides:\n  invoker_user_memory: 8192m\n  limit_fires_per_minute: 10\n")
    result = _run(
        "--allow-auto", "--print-overrides", "--overrides-file", str(vars_file), "--set", "limit_fires_per_minute=20"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"invoker_user_memory": "8192m", "limit_fires_per_minute": 20}


def test_table_problems_are_all_reported(tmp_path):
    table = tmp_path / "table.yml"
    table.write_text(
        "format_version: 1\nsettings:\n"
        "  - {name: a_b, via: ansible, value: 1, group: limits, why: x}\n"
        "  - {name: a_b, via: ansible, value: 1, group: limits, why: x}\n"
        "  - {name: FOO, via: invoker_env, value: 1, group: limits, why: x}\n"
        "  - {name: c, via: shell, value: 1, group: other, why: x}\n"
    )
    with pytest.raises(openwhisk_vars.SettingsError) as info:
        openwhisk_vars.load_table(table)
    text = "\n".join(info.value.problems)
    assert "a_b appears twice" in text
    assert "'FOO' must be a CONFIG_" in text
    assert "via must be one of" in text and "group must be one of" in text


@pytest.mark.parametrize(
    "value, mb", [("4096m", 4096), ("4g", 4096), ("2048 MB", 2048), (512, 512), ("lots", None), (True, None)]
)
def test_size_mb(value, mb):
    assert openwhisk_vars.size_mb(value) == mb
