"""OpenWhisk's action containers on one host, from what Docker said there: ``docker ps`` snapshots
and the ``docker events`` stream (one JSON object a line, ``--format '{{json .}}'``), parsed into
spans of existence on that host's wall clock (standard library only: shipped to the hosts with the
agent, read by the analyzer).

Container names (OpenWhisk 2.0.0, ``ContainerProxy.containerName`` and
``ContainerFactory.containerNamePrefix``): ``wsk<uniqueName><instance>_<count>_<prefix>_<suffix>``
where the invoker part keeps letters, digits, ``_``, ``.`` and ``-``, and prefix and suffix keep
letters, digits and ``_`` only. An action's container has the namespace as prefix (the invoking
user's in the classic pool, the action's in the scheduler's pool) and the action's name, without
its package, as suffix; a prewarmed container has ``prewarm`` and the runtime kind (``nodejs20``
for ``nodejs:20``), and keeps that name when it later takes an action. ``action_key`` and
``prewarm_key`` give the part after ``<count>_`` that a record's namespace, name and kind map to.

A span errs wide, never narrow (a span too short could make the wrong host look like the only one):
a container starts at its ``create`` event (else ``start``, else the ``CreatedAt`` of a snapshot,
whole seconds rounded down) and ends at its ``destroy`` event (else ``die``, else the watch's end:
still there, or its end unseen). A container seen only in the start snapshot and never again
ended at the watch's end too: it may have gone unnoticed.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass

from faasprof.errors import FormatError

# The part after the invoker's prefix and the container's count; the prefix is the shortest run
# of allowed characters before ``_<digits>_`` (OpenWhisk's own listing filters by it the same way).
_NAME = re.compile(r"^(?P<invoker>wsk[A-Za-z0-9_.-]*?)_(?P<count>\d+)_(?P<key>.+)$")
PREWARM = "prewarm"
_BEGIN_EVENTS = ("create", "start")
_END_EVENTS = ("destroy", "die")


@dataclass(frozen=True)
class ContainerSpan:
    """One action container's existence on a host, in ns of that host's wall clock."""

    name: str
    container_id: str
    invoker: str  # the invoker part of the name: wsk0, wskinvoker1...
    key: str  # what follows the count: <namespace>_<action>, or prewarm_<kind>
    begin_wall_ns: int
    end_wall_ns: int


def sanitize(text: str) -> str:
    """What OpenWhisk keeps of a namespace or an action's name in a container's name."""
    return "".join(c for c in text if c.isalnum() or c == "_")


def action_key(namespace: str, name: str) -> str:
    """The part of an action container's name a record's namespace and action name give."""
    return f"{sanitize(namespace)}_{sanitize(name)}"


def prewarm_key(kind: str) -> str:
    """The part of a prewarmed container's name for runtime ``kind`` (``nodejs:20``)."""
    return f"{PREWARM}_{sanitize(kind)}"


def openwhisk_name(name: str) -> tuple[str, str] | None:
    """(invoker, key) of an OpenWhisk action container's name; None for any other container."""
    match = _NAME.match(name.lstrip("/"))
    return (match["invoker"], match["key"]) if match else None


def _objects(text: str, what: str):
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            raise FormatError(f"not {what}: line {number} is not JSON ({line[:40]!r})") from None
        if not isinstance(value, dict):
            raise FormatError(f"not {what}: line {number} is not a JSON object")
        yield value


def _created_ns(text: str) -> int | None:
    """``docker ps``'s ``CreatedAt`` (``2026-11-27 01:47:32 +0000 UTC``) in ns; None when unreadable."""
    try:
        when = _dt.datetime.strptime(" ".join(str(text).split(" ")[:3]), "%Y-%m-%d %H:%M:%S %z")
    except ValueError:
        return None
    return int(when.timestamp()) * 1_000_000_000


def parse_ps(text: str) -> dict[str, tuple[str, int | None]]:
    """``{container id: (name, created ns or None)}`` of a ``docker ps --no-trunc --format
    '{{json .}}'`` snapshot, its OpenWhisk containers only."""
    result = {}
    for row in _objects(text, "docker ps --format '{{json .}}' output"):
        if "ID" not in row or "Names" not in row:
            raise FormatError("not docker ps --format '{{json .}}' output: a line lacks ID or Names")
        name = str(row["Names"]).split(",")[0]
        if openwhisk_name(name) is not None:
            result[str(row["ID"])] = (name, _created_ns(row.get("CreatedAt", "")))
    return result


def parse_events(text: str) -> dict[str, dict]:
    """``{container id: {"name": str, action: first ns}}`` from ``docker events --format
    '{{json .}}'``, its OpenWhisk containers' create, start, die and destroy only."""
    result: dict[str, dict] = {}
    for event in _objects(text, "docker events --format '{{json .}}' output"):
        if event.get("Type", "container") != "container":
            continue
        action = event.get("Action") or event.get("status")
        name = ((event.get("Actor") or {}).get("Attributes") or {}).get("name")
        when = event.get("timeNano")
        if action not in _BEGIN_EVENTS + _END_EVENTS or not isinstance(name, str) or openwhisk_name(name) is None:
            continue
        if not isinstance(when, int):
            raise FormatError(f"not docker events --format '{{{{json .}}}}' output: {name}'s {action} has no timeNano")
        entry = result.setdefault(str(event.get("id") or (event.get("Actor") or {}).get("ID")), {"name": name})
        entry.setdefault(action, when)
    return result


def container_spans(
    events_text: str, ps_start_text: str, ps_end_text: str, watch_start_ns: int, watch_end_ns: int
) -> list[ContainerSpan]:
    """Every OpenWhisk container the host had while it was watched (``watch_start_ns`` to
    ``watch_end_ns`` on its wall clock), as spans (the module docstring says how they err)."""
    events = parse_events(events_text)
    before = parse_ps(ps_start_text)
    after = parse_ps(ps_end_text)
    spans = []
    for container_id in sorted(set(events) | set(before) | set(after)):
        seen = events.get(container_id, {})
        name = seen.get("name") or (before.get(container_id) or after.get(container_id) or ("", None))[0]
        created = [
            c for c in ((before.get(container_id) or ("", None))[1], (after.get(container_id) or ("", None))[1]) if c
        ]
        begin = next((seen[a] for a in _BEGIN_EVENTS if a in seen), None)
        if container_id in before or begin is None:
            begin = min([*created, *([begin] if begin is not None else []), watch_start_ns])
        end = next((seen[a] for a in _END_EVENTS if a in seen), watch_end_ns)
        invoker, key = openwhisk_name(name) or ("", "")
        spans.append(ContainerSpan(name.lstrip("/"), container_id, invoker, key, int(begin), int(max(begin, end))))
    return spans


def latest_event_ns(events_text: str) -> int | None:
    """The time of the last OpenWhisk container event (how far a watch whose end was not recorded,
    its host lost, saw); None without any."""
    times = [when for entry in parse_events(events_text).values() for key, when in entry.items() if key != "name"]
    return max(times) if times else None
