"""Success criteria of a run, as load-testing tools set them (k6's thresholds): did the run pass?

A run can complete (every planned invocation sent and answered) and still have measured nothing
useful: every call throttled, refused, timed out or rejected. ``evaluate`` checks the run's rows
against thresholds and names the dominant failure with its fix, so ``faasprof run`` can exit 1
while the manifest's status stays ``complete`` and its ``verdict`` block says why it failed.

Thresholds (workload ``thresholds`` block, ``faasprof run --threshold NAME=VALUE``; the command
line wins):

  min_successes              invocations that succeeded, at least this many (default 1)
  min_successes_per_instance of each instance that attempted invocations, at least this many
                             succeeded (default 1: an instance whose every call failed, such as a
                             function given the wrong input, fails the run even when the others
                             carry the failure rate)
  max_failure_rate           share of attempted invocations (all but ``not_sent``) that did not
                             succeed, at most this (default 0.5: the run fails when most failed)
  max_no_record_rate_per_instance
                             of each instance's accepted invocations (202, or a blocking 200/502),
                             the share without an activation record, at most this (default 0.5:
                             an instance whose calls mostly went unmeasured fails the run, its
                             line naming the instance, the count and why the records are missing)

"Succeeded" is the final outcome (faasprof/outcomes.py) where the run saved the activation
records: a non-blocking call the platform accepted (202) whose function raised is an
``application_error``, and one without a record is ``no_record``: neither is a success. Only
where the run saved no records at all (a platform it did not start, without ``--analyze``) the
HTTP outcome decides (``ok``).
  max_client_latency_ms_p50  p50 / p99 of send → answer of the ``ok`` invocations, at most this
  max_client_latency_ms_p99
  max_lateness_ms_p99        p99 of intended → sent (the invoker's own error), at most this
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Collection, Iterable, Mapping

from faasprof import rundir
from faasprof.errors import ConfigError
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, SHARED_TMP_FRAGMENT, STOPPED_IN_FLIGHT_TEXT, final_outcome

VERDICT_FORMAT_VERSION = 1

DEFAULT_THRESHOLDS: dict[str, float] = {
    "min_successes": 1,
    "min_successes_per_instance": 1,
    "max_failure_rate": 0.5,
    "max_no_record_rate_per_instance": 0.5,
}
THRESHOLD_NAMES = (
    "min_successes",
    "min_successes_per_instance",
    "max_failure_rate",
    "max_no_record_rate_per_instance",
    "max_client_latency_ms_p50",
    "max_client_latency_ms_p99",
    "max_lateness_ms_p99",
)

# Known causes: (outcome, http status or None, a fragment of the error or None) → the fix.
_THROTTLE_FIX = (
    "raise the platform's throttles (localwhisk: platform.localwhisk.invokes_per_minute / concurrent limits; "
    "OpenWhisk: limit_invocations_per_minute, limit_invocations_concurrent) or lower the workload's rate"
)


def parse_thresholds(pairs: Iterable[str], origin: str = "--threshold") -> dict[str, float]:
    """``NAME=VALUE`` strings from the command line; ConfigError naming the bad one."""
    parsed: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or name not in THRESHOLD_NAMES:
            raise ConfigError(f"{origin} {pair}: expected NAME=VALUE with NAME one of {', '.join(THRESHOLD_NAMES)}")
        parsed[name] = _number(value, f"{origin} {name}")
    return parsed


def check_thresholds(block: Any, origin: str) -> dict[str, float]:
    """A workload's ``thresholds`` block, checked (the schema checks it too; this is the run's own guard)."""
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise ConfigError(
            f"{origin}: thresholds: must be an object of NAME: number (names: {', '.join(THRESHOLD_NAMES)})"
        )
    checked = {}
    for name, value in block.items():
        if name not in THRESHOLD_NAMES:
            raise ConfigError(
                f"{origin}: thresholds.{name}: unknown threshold; use one of {', '.join(THRESHOLD_NAMES)}"
            )
        checked[name] = _number(value, f"{origin}: thresholds.{name}")
    return checked


def _number(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ConfigError(f"{where}: must be a finite number >= 0 (got {value!r})")
    if where.endswith(("max_failure_rate", "max_no_record_rate_per_instance")) and number > 1:
        raise ConfigError(f"{where}: is a share of invocations, 0..1 (got {value!r})")
    return number


def _percentile(values: list[int], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    rank = q * (len(values) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


_RECORD_FIXES = {
    "application_error": "the function returned an error (its activation records' response.result.error says which); fix the function or its parameters",
    "developer_error": "the action crashed, returned no JSON object or failed its initialisation; see the activation records' logs and result",
    "action_timeout": "the action ran past its time limit; raise the action's timeout (faasprof deploy --timeout) or give it less work",
    "internal_error": "the platform failed internally (whisk internal error); check its logs",
    "platform_stopped": (
        "the platform was stopped before these activations completed (the wait for them was abandoned with Ctrl-C, "
        "or gave up on a platform where none ended); let the run wait for them, or lower the rate so that the platform keeps up"
    ),
}


_NEVER_ANSWERED_FIX = (
    "the platform refused connections and answered no call: it is down or --apihost names the wrong port; "
    "start it and check with faasprof doctor"
)


class Refusals:
    """When a run's refused connections happened against the platform's answers, which tells their
    cause: refusals between answers are a full accept queue (the platform over-invoked, alive);
    refusals only after the last answer are a platform that went away or stayed swamped; refusals
    with no answer at all are a platform that was never there (down, or the wrong port)."""

    def __init__(self) -> None:
        self.answered = 0
        self.last_answered_ns: int | None = None
        self.first_refused_ns: int | None = None

    def answer(self, intended_ns: int | None) -> None:
        self.answered += 1
        if intended_ns is not None:
            self.last_answered_ns = max(intended_ns, self.last_answered_ns or intended_ns)

    def refusal(self, intended_ns: int | None) -> None:
        if intended_ns is not None:
            self.first_refused_ns = min(intended_ns, self.first_refused_ns or intended_ns)

    def fix(self) -> str:
        if not self.answered:
            return _NEVER_ANSWERED_FIX
        first, last = self.first_refused_ns, self.last_answered_ns
        if first is None or last is None or first < last:
            return (
                f"the platform refused these connections while it answered others ({self.answered:,} calls): its "
                "accept queue was full, the rate over-invoked it; where over-invoking is the experiment that is the "
                "measurement, else lower the workload's rate below the platform's capacity (faasprof capacity)"
            )
        return (
            f"the platform answered {self.answered:,} calls, then refused every connection from {first / 1e9:.3g} s "
            "into the run on: it went down or stayed swamped to the end; check its logs, and if it is still up, "
            "lower the workload's rate"
        )


def _refused(text: str) -> bool:
    return "refused" in text or "cannot connect" in text or "unreachable" in text


def failure_fix(outcome: str, status: int | None, error: str) -> str:
    """What to do about one kind of failure (the dominant one is reported). Refused connections
    get the fix of a platform that answered nothing; a run that got answers too tells their cause
    (``Refusals``)."""
    text = error.lower()
    if outcome in _RECORD_FIXES:
        return _RECORD_FIXES[outcome]
    if outcome == "no_record":
        return "the platform accepted these calls but no activation record of them was saved; see the manifest's activations block (missing_why)"
    if outcome == "throttled":
        return _THROTTLE_FIX
    if outcome == "timeout" and error.startswith(STOPPED_IN_FLIGHT_TEXT):
        return (
            "the run was stopped while these calls were in flight (the manifest's status_reason says why): "
            "they were cut off, not slow; let the run finish to measure them"
        )
    if outcome == "timeout":
        return "no answer within --request-timeout-s: the platform is overloaded or the action too slow; lower the rate or raise --request-timeout-s"
    if outcome == "app_error":
        return "the action itself failed (502); fix the function or its parameters (see the error column)"
    if outcome == "failed" and status is None:
        if _refused(text):
            return _NEVER_ANSWERED_FIX
        return "no HTTP answer (connection reset or closed): the platform or a proxy in front of it dropped the calls; check its logs"
    if status == 413:
        return "the platform rejected the request body as too large (413): the data_file is over its payload limit; use a smaller file (OpenWhisk's default limit is 1 MB)"
    if status in (401, 403):
        return "the platform refused the credentials; check --auth (or AUTH in ~/.wskprops)"
    if status == 404:
        return "the action (or URL) does not exist; deploy it (faasprof deploy) or fix the instance's application/url"
    if status is not None and 500 <= status < 600:
        return f"the platform answered {status} (a server error); check its logs"
    if outcome == "not_sent":
        return "the run stopped before sending them; see the manifest's status_reason"
    return f"see the error column of {rundir.INVOCATIONS} ({error or 'no message'})"


def evaluate(
    rows: Iterable[Mapping[str, str]],
    thresholds: Mapping[str, float] | None = None,
    records: Mapping[str, Mapping] | None = None,
    missing_why: str | None = None,
    recorded_instances: Collection[str] | None = None,
) -> dict:
    """Check a run's rows (``invocations.csv`` as dicts of strings) against the thresholds.

    ``records`` (activation id → activation record), when the run saved them, turns each accepted
    call into its final outcome: the record's, or ``no_record`` where it has none (not a success);
    ``missing_why`` says why records are missing (the records report's ``missing_why``). Without
    ``records`` (None: nothing was fetched), and for the instances not in ``recorded_instances``
    (when given: those of a platform that keeps no records, a generic endpoint), the HTTP outcome decides.

    Returns the manifest's ``verdict`` block: ``passed``, one ``message`` line, each threshold
    with its value, and the dominant failure with its count, share, a sample error and the fix.
    """
    limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    tally = _Tally(records, missing_why, recorded_instances)
    for row in rows:
        tally.add(row)
    checks = _checks(_measure(tally), limits, thresholds or {}, tally)
    passed = all(check["passed"] for check in checks)
    dominant = tally.dominant()
    return {
        "format_version": VERDICT_FORMAT_VERSION,
        "passed": passed,
        "message": _message(passed, checks, tally, dominant),
        "thresholds": checks,
        "outcomes": dict(sorted(tally.outcomes.items())),
        "attempted": tally.attempted,
        "dominant_failure": dominant,
    }


class _InstanceTally:
    """One instance's attempted invocations, those that succeeded, its accepted calls and those of
    them without a record, and its first failure."""

    def __init__(self) -> None:
        self.attempted = 0
        self.ok = 0
        self.accepted = 0
        self.no_record = 0
        self.first_error: str | None = None


class _Tally:
    """The rows counted by final outcome, per instance and per kind of failure (told apart by fix)."""

    def __init__(
        self, records: Mapping[str, Mapping] | None, missing_why: str | None, recorded: Collection[str] | None
    ) -> None:
        self.records, self.missing_why = records, missing_why
        self.recorded = None if recorded is None else frozenset(recorded)
        self.outcomes: Counter = Counter()
        self.kinds: Counter = Counter()
        self.samples: dict[tuple, str] = {}
        self.latency_ns: list[int] = []
        self.lateness_ns: list[int] = []
        self.instances: dict[str, _InstanceTally] = {}
        self.refusals = Refusals()

    @property
    def attempted(self) -> int:
        return sum(count for outcome, count in self.outcomes.items() if outcome != "not_sent")

    def add(self, row: Mapping[str, str]) -> None:
        outcome, record = self._final(row)
        self.outcomes[outcome] += 1
        if row.get("http_status"):
            self.refusals.answer(_ns(row.get("intended_ns")))
        if row["sent_ns"] and row["intended_ns"]:
            self.lateness_ns.append(int(row["sent_ns"]) - int(row["intended_ns"]))
        if outcome == "not_sent":  # the run stopped first: its status says why, not a failed call
            return
        tally = self.instances.setdefault(row.get("instance") or "", _InstanceTally())
        tally.attempted += 1
        if row["outcome"] in ACCEPTED_HTTP_OUTCOMES and self._due(row):
            tally.accepted += 1
            tally.no_record += outcome == "no_record"
        if outcome == "ok":
            tally.ok += 1
            if row["sent_ns"] and row["done_ns"]:
                self.latency_ns.append(int(row["done_ns"]) - int(row["sent_ns"]))
            return
        self._failure(tally, outcome, row, record)

    def _final(self, row: Mapping[str, str]) -> tuple[str, Mapping | None]:
        """The row's outcome after its record (``ok`` standing for success), and the record."""
        outcome = row["outcome"]
        if self.records is None or outcome not in ACCEPTED_HTTP_OUTCOMES or not self._due(row):
            return outcome, None
        record = self.records.get(row.get("activation_id") or "")
        final = final_outcome(outcome, record)
        return ("ok" if final == "success" else final), record

    def _due(self, row: Mapping[str, str]) -> bool:
        return self.recorded is None or (row.get("instance") or "") in self.recorded

    def _failure(self, tally: _InstanceTally, outcome: str, row: Mapping[str, str], record: Mapping | None) -> None:
        status = int(row["http_status"]) if row["http_status"] else None
        error = row.get("error") or ""
        fix = None
        if record is not None:  # the record, not the 202 or 502, says what went wrong
            status, error, fix = None, _record_error(record), _platform_fix(record)
        elif outcome == "no_record":
            status, error = None, self.missing_why or "no activation record was saved for it"
        if tally.first_error is None:
            tally.first_error = _label(outcome, status) + (f": {error}" if error else "")
        if outcome == "failed" and status is None and _refused(error.lower()):
            self.refusals.refusal(_ns(row.get("intended_ns")))
        # Failures are told apart by their fix: a refused connection and a reset one are both
        # "failed" without a status, but they mean different things (the refusals' own fix
        # depends on the whole run, so it is chosen once all rows are in: ``dominant``).
        key = (outcome, status, fix or failure_fix(outcome, status, error))
        self.kinds[key] += 1
        self.samples.setdefault(key, error)

    def weakest(self) -> tuple[str, _InstanceTally] | None:
        """The instance with the fewest successes (the first one named, on a tie)."""
        return min(sorted(self.instances.items()), key=lambda item: item[1].ok, default=None)

    def most_unrecorded(self) -> tuple[str, _InstanceTally] | None:
        """The instance whose accepted calls most often have no record (None without records)."""
        if self.records is None:
            return None
        judged = [(name, t) for name, t in sorted(self.instances.items()) if t.accepted]
        return max(judged, key=lambda item: item[1].no_record / item[1].accepted, default=None)

    def dominant(self) -> dict | None:
        if not self.kinds:
            return None
        key, count = self.kinds.most_common(1)[0]
        outcome, status, fix = key
        attempted, error = self.attempted, self.samples[key]
        if fix == _NEVER_ANSWERED_FIX:
            fix = self.refusals.fix()
        return {
            "outcome": outcome,
            "http_status": status,
            "count": count,
            "share": round(count / attempted, 6) if attempted else None,
            "error": error,
            "fix": fix,
        }


def _measure(tally: _Tally) -> dict:
    """Each threshold's measured value (None: nothing to measure)."""
    attempted, ok = tally.attempted, tally.outcomes.get("ok", 0)
    weakest, unrecorded = tally.weakest(), tally.most_unrecorded()
    return {
        "min_successes": ok,
        "min_successes_per_instance": weakest[1].ok if weakest is not None else None,
        "max_failure_rate": round((attempted - ok) / attempted if attempted else 0.0, 6),
        "max_no_record_rate_per_instance": round(unrecorded[1].no_record / unrecorded[1].accepted, 6)
        if unrecorded is not None
        else None,
        "max_client_latency_ms_p50": _ms(_percentile(tally.latency_ns, 0.50)),
        "max_client_latency_ms_p99": _ms(_percentile(tally.latency_ns, 0.99)),
        "max_lateness_ms_p99": _ms(_percentile(tally.lateness_ns, 0.99)),
    }


def _checks(measured: dict, limits: Mapping[str, float], given: Mapping[str, float], tally: _Tally) -> list[dict]:
    """One check per threshold set, in ``THRESHOLD_NAMES`` order, with the instance it names."""
    checks = []
    for name in THRESHOLD_NAMES:
        if name not in limits:
            continue
        limit, value = limits[name], measured[name]
        if value is None:  # nothing to measure (no instance attempted a call; a run without successes reports 0)
            passed = True
        elif name.startswith("min_"):
            passed = value >= limit
        else:
            passed = value <= limit
        check = {
            "name": name,
            "limit": limit,
            "value": value,
            "passed": bool(passed),
            "source": "default" if name in DEFAULT_THRESHOLDS and name not in given else "user",
        }
        instance = (
            tally.weakest()
            if name == "min_successes_per_instance"
            else tally.most_unrecorded()
            if name == "max_no_record_rate_per_instance"
            else None
        )
        if instance is not None:
            check.update(
                instance=instance[0],
                attempted=instance[1].attempted,
                accepted=instance[1].accepted,
                no_record=instance[1].no_record,
                first_error=instance[1].first_error,
            )
            if name == "max_no_record_rate_per_instance":
                check["why"] = tally.missing_why or "no activation record was saved for them"
        checks.append(check)
    return checks


def _message(passed: bool, checks: list[dict], tally: _Tally, dominant: dict | None) -> str:
    """The verdict in one line: what passed, or each failed check and the dominant failure's fix."""
    attempted, ok = tally.attempted, tally.outcomes.get("ok", 0)
    if passed:
        return f"passed: {ok:,} of {attempted:,} attempted invocations succeeded"
    failed = [check for check in checks if not check["passed"]]
    # Calls without a record are the first thing to say: the other figures are made of them.
    failed.sort(key=lambda check: check["name"] != "max_no_record_rate_per_instance")
    if not ok:  # "no invocation succeeded" says it of every instance already
        failed = [check for check in failed if check["name"] != "min_successes_per_instance"] or failed
    message = "failed: " + "; ".join(_describe(check) for check in failed)
    if dominant is not None and not (
        dominant["outcome"] == "no_record" and failed[0]["name"] == "max_no_record_rate_per_instance"
    ):
        label = _label(dominant["outcome"], dominant["http_status"])
        message += f"; dominant failure: {label} in {dominant['count']:,} of {attempted:,}"
        message += f" ({dominant['error']})" if dominant["error"] else ""
        message += f"; fix: {dominant['fix']}"
    return message


def _label(outcome: str, status: int | None) -> str:
    return outcome + (f" (HTTP {status})" if status else "")


def _platform_fix(record: Mapping) -> str | None:
    """The fix a record's platform names in its logs, when the failure may be the platform's: a
    process sandbox sharing the host's /tmp (a fixed /tmp name collides between concurrent calls)."""
    if any(SHARED_TMP_FRAGMENT in str(line) for line in record.get("logs") or ()):
        return (
            "the failed calls name a /tmp path and their sandboxes share the host's /tmp (process sandboxes without a "
            "mount namespace): a fixed /tmp name collides between concurrent calls, unlike in OpenWhisk's containers; "
            "run localwhisk as root (a /tmp per sandbox) or with --isolation docker"
        )
    return None


def _record_error(record: Mapping) -> str:
    result = (record.get("response") or {}).get("result")
    error = result.get("error") if isinstance(result, Mapping) else None
    return (error if isinstance(error, str) else str(error or ""))[:200]


def _ns(text: str | None) -> int | None:
    return int(text) if text else None


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else round(value_ns / 1e6, 3)


def _describe(check: dict) -> str:
    name, value, limit = check["name"], check["value"], check["limit"]
    if name == "min_successes":
        return "no invocation succeeded" if not value else f"{value:,} invocations succeeded, fewer than {limit:g}"
    if name == "min_successes_per_instance":
        error = f" (first error: {check['first_error']})" if check.get("first_error") else ""
        succeeded = "none" if not value else f"{value:,}"
        fewer = f", fewer than {limit:g}" if value else ""
        return f"instance {check['instance']}: {succeeded} of its {check['attempted']:,} attempted invocations succeeded{fewer}{error}"
    if name == "max_failure_rate":
        return f"{value:.0%} of attempted invocations failed (threshold {limit:.0%})"
    if name == "max_no_record_rate_per_instance":
        return (
            f"instance {check['instance']}: {check['no_record']:,} of its {check['accepted']:,} accepted invocations have no activation record "
            f"(threshold {limit:.0%}): {check['why']}"
        )
    return f"{name.removeprefix('max_')} is {value} (threshold {limit:g})"


__all__ = ["DEFAULT_THRESHOLDS", "THRESHOLD_NAMES", "check_thresholds", "evaluate", "failure_fix", "parse_thresholds"]
