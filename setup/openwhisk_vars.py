"""Render setup/openwhisk_settings.yml (plus overrides) into the extra-vars JSON for OpenWhisk.

The table is the only place an OpenWhisk variable is named. This script validates it, applies
``--set NAME=VALUE`` overrides (a name that is not in the table is an error, so a typo cannot
silently keep a default), checks the values against each other, and prints the JSON that every
OpenWhisk playbook receives with ``-e @file``:

    {"limit_invocations_per_minute": 999999, ...,
     "invoker_extraEnv": {"CONFIG_whisk_containerProxy_timeouts_pauseGrace": "50 milliseconds"},
     "controller_extraEnv": {}}

Run by setup/testbed.sh (early, to fail before touching the machine) and by the openwhisk role.
Needs PyYAML, which comes with ansible-core. Exit 2 with one line per problem on bad input.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

TABLE_PATH = Path(__file__).resolve().parent / "openwhisk_settings.yml"
FORMAT_VERSION = 1
VIA = ("ansible", "controller_env", "invoker_env")
GROUPS = ("limits", "deployment")
# Settings that must be resolved to a real value before the OpenWhisk playbooks see them.
AUTO_ALLOWED = {"invoker_use_runc"}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgKMG]?)[bB]?\s*$")
_ENV_NAME_RE = re.compile(r"^CONFIG_[A-Za-z0-9_]+$")
_ANSIBLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SettingsError(Exception):
    """The table or an override is wrong; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__(problems[0] if problems else "invalid OpenWhisk settings")
        self.problems = problems


@dataclass(frozen=True)
class Setting:
    name: str
    via: str
    value: Any
    group: str
    why: str


def load_table(path: Path = TABLE_PATH) -> list[Setting]:
    """Parse and validate the table; raises SettingsError listing every problem."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError([f"{path}: cannot read the settings table: {exc}"]) from exc
    problems: list[str] = []
    if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
        raise SettingsError([f"{path}: format_version must be {FORMAT_VERSION}"])
    rows = data.get("settings")
    if not isinstance(rows, list) or not rows:
        raise SettingsError([f"{path}: 'settings' must be a non-empty list"])
    settings: list[Setting] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        where = f"{path}: settings[{index}]"
        if not isinstance(row, dict):
            problems.append(f"{where}: must be a mapping with name, via, value, group, why")
            continue
        missing = [key for key in ("name", "via", "value", "group", "why") if key not in row]
        extra = sorted(set(row) - {"name", "via", "value", "group", "why"})
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
            continue
        if extra:
            problems.append(f"{where}: unknown column(s) {', '.join(extra)}")
        name, via = str(row["name"]), row["via"]
        if via not in VIA:
            problems.append(f"{where} ({name}): via must be one of {', '.join(VIA)}")
        elif via == "ansible" and not _ANSIBLE_NAME_RE.match(name):
            problems.append(f"{where}: {name!r} is not an ansible variable name")
        elif via != "ansible" and not _ENV_NAME_RE.match(name):
            problems.append(f"{where}: {name!r} must be a CONFIG_... environment variable name")
        if row["group"] not in GROUPS:
            problems.append(f"{where} ({name}): group must be one of {', '.join(GROUPS)}")
        if name in seen:
            problems.append(f"{where}: {name} appears twice")
        seen.add(name)
        if row["value"] is None or isinstance(row["value"], (dict, list)):
            problems.append(f"{where} ({name}): value must be a string, number or boolean")
        settings.append(Setting(name, via, row["value"], row["group"], str(row["why"])))
    if problems:
        raise SettingsError(problems)
    return settings


def parse_assignment(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` → (name, value); the value is read as YAML (numbers, true/false)."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise SettingsError([f"--set {text!r}: expected NAME=VALUE, e.g. --set invoker_user_memory=8192m"])
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    if isinstance(value, (dict, list)) or value is None:
        value = raw
    return name.strip(), value


def size_mb(value: Any) -> int | None:
    """OpenWhisk memory sizes ("4096m", "4g", "2048 MB", 512) in MiB; None if unparsable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = _SIZE_RE.match(str(value))
    if not match:
        return None
    number, unit = int(match.group(1)), match.group(2).lower()
    return {"": number, "m": number, "k": number // 1024, "g": number * 1024}[unit]


def resolve(settings: list[Setting], overrides: dict[str, Any], allow_auto: bool = False) -> dict[str, Setting]:
    """Apply overrides; check names and consistency. Returns name → effective Setting."""
    by_name = {s.name: s for s in settings}
    problems: list[str] = []
    for name in overrides:
        if name not in by_name:
            close = difflib.get_close_matches(name, list(by_name), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(
                f"override {name!r} is not in setup/openwhisk_settings.yml{hint}; add a row there "
                f"(known: {', '.join(sorted(by_name))})"
            )
    if problems:
        raise SettingsError(problems)
    effective = {
        name: Setting(s.name, s.via, overrides.get(name, s.value), s.group, s.why) for name, s in by_name.items()
    }
    for setting in effective.values():
        if setting.value == "auto" and not (allow_auto and setting.name in AUTO_ALLOWED):
            problems.append(f"{setting.name}: 'auto' must be resolved to a value before deploying")
    for name in (
        "invoker_user_memory",
        "limit_action_memory_min",
        "limit_action_memory_max",
        "limit_action_memory_std",
    ):
        if name in effective and size_mb(effective[name].value) is None:
            problems.append(f"{name}: {effective[name].value!r} is not a memory size such as 4096m")
    if not problems and {"invoker_user_memory", "limit_action_memory_max"} <= set(effective):
        user = size_mb(effective["invoker_user_memory"].value)
        top = size_mb(effective["limit_action_memory_max"].value)
        if user is not None and top is not None and top > user:
            problems.append(
                f"limit_action_memory_max ({top} MB) exceeds invoker_user_memory ({user} MB): such actions "
                "could never be placed; raise invoker_user_memory or lower limit_action_memory_max"
            )
        low = size_mb(effective["limit_action_memory_min"].value) if "limit_action_memory_min" in effective else None
        std = size_mb(effective["limit_action_memory_std"].value) if "limit_action_memory_std" in effective else None
        if low is not None and top is not None and std is not None and not low <= std <= top:
            problems.append("limit_action_memory_min <= limit_action_memory_std <= limit_action_memory_max must hold")
    if problems:
        raise SettingsError(problems)
    return effective


def render(effective: dict[str, Setting]) -> dict[str, Any]:
    """The extra-vars document for OpenWhisk's playbooks."""
    out: dict[str, Any] = {}
    controller_env: dict[str, str] = {}
    invoker_env: dict[str, str] = {}
    for setting in effective.values():
        if setting.via == "ansible":
            out[setting.name] = setting.value
        else:
            # Environment values are strings; booleans as HOCON spells them.
            text = str(setting.value).lower() if isinstance(setting.value, bool) else str(setting.value)
            (controller_env if setting.via == "controller_env" else invoker_env)[setting.name] = text
    out["controller_extraEnv"] = controller_env
    out["invoker_extraEnv"] = invoker_env
    return out


def _file_overrides(path: Path) -> dict[str, Any]:
    """The ``openwhisk_overrides`` mapping of a YAML vars file (empty when it has none)."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError([f"{path}: cannot read: {exc}"]) from exc
    overrides = data.get("openwhisk_overrides", {}) if isinstance(data, dict) else None
    if not isinstance(overrides, dict):
        raise SettingsError([f"{path}: openwhisk_overrides must be a mapping of setting name to value"])
    return overrides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=TABLE_PATH, help="settings table (default: %(default)s)")
    parser.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one setting of the table (repeatable)",
    )
    parser.add_argument("--overrides-json", default="{}", help="overrides as a JSON object (from ansible)")
    parser.add_argument(
        "--overrides-file",
        type=Path,
        help="a YAML vars file (local/testbed.yml); its openwhisk_overrides mapping is applied first",
    )
    parser.add_argument(
        "--print-overrides",
        action="store_true",
        help="validate, then print the merged overrides as JSON (for ansible -e) instead of the extra vars",
    )
    parser.add_argument("--allow-auto", action="store_true", help="accept 'auto' values (validation only)")
    parser.add_argument("--out", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    try:
        overrides: dict[str, Any] = {}
        if args.overrides_file:
            overrides.update(_file_overrides(args.overrides_file))
        from_json = json.loads(args.overrides_json)
        if not isinstance(from_json, dict):
            raise SettingsError(["--overrides-json must be a JSON object"])
        overrides.update(from_json)
        for text in args.assignments:
            name, value = parse_assignment(text)
            overrides[name] = value
        effective = resolve(load_table(args.table), overrides, allow_auto=args.allow_auto)
    except json.JSONDecodeError as exc:
        print(f"--overrides-json: not JSON: {exc}", file=sys.stderr)
        return 2
    except SettingsError as exc:
        for line in exc.problems:
            print(line, file=sys.stderr)
        return 2
    document = overrides if args.print_overrides else render(effective)
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
