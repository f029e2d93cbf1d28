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

"Succeeded" is the final outcome (faasprof/outcomes.py) where the run saved the invocation's
activation record: a non-blocking call the platform accepted (202) whose function raised is an
``application_error``, not a success. Without a record the HTTP outcome decides (``ok``).
  max_client_latency_ms_p50  p50 / p99 of send → answer of the ``ok`` invocations, at most this
  max_client_latency_ms_p99
  max_lateness_ms_p99        p99 of intended → sent (the invoker's own error), at most this
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping

from faasprof import rundir
from faasprof.errors import ConfigError
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, final_outcome

VERDICT_FORMAT_VERSION = 1

DEFAULT_THRESHOLDS: dict[str, float] = {"min_successes": 1, "min_successes_per_instance": 1, "max_failure_rate": 0.5}
THRESHOLD_NAMES = ("min_successes", "min_successes_per_instance", "max_failure_rate", "max_client_latency_ms_p50", "max_client_latency_ms_p99",
                   "max_lateness_ms_p99")

# Known causes: (outcome, http status or None, a fragment of the error or None) → the fix.
_THROTTLE_FIX = ("raise the platform's throttles (localwhisk: platform.localwhisk.invokes_per_minute / concurrent limits; "
                 "OpenWhisk: limit_invocations_per_minute, limit_invocations_concurrent) or lower the workload's rate")


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
        raise ConfigError(f"{origin}: thresholds: must be an object of NAME: number (names: {', '.join(THRESHOLD_NAMES)})")
    checked = {}
    for name, value in block.items():
        if name not in THRESHOLD_NAMES:
            raise ConfigError(f"{origin}: thresholds.{name}: unknown threshold; use one of {', '.join(THRESHOLD_NAMES)}")
        checked[name] = _number(value, f"{origin}: thresholds.{name}")
    return checked


def _number(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ConfigError(f"{where}: must be a finite number >= 0 (got {value!r})")
    if where.endswith("max_failure_rate") and number > 1:
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
}


def failure_fix(outcome: str, status: int | None, error: str) -> str:
    """What to do about one kind of failure (the dominant one is reported)."""
    text = error.lower()
    if outcome in _RECORD_FIXES:
        return _RECORD_FIXES[outcome]
    if outcome == "throttled":
        return _THROTTLE_FIX
    if outcome == "timeout":
        return "no answer within --request-timeout-s: the platform is overloaded or the action too slow; lower the rate or raise --request-timeout-s"
    if outcome == "app_error":
        return "the action itself failed (502); fix the function or its parameters (see the error column)"
    if outcome == "failed" and status is None:
        if "refused" in text or "cannot connect" in text or "unreachable" in text:
            return "the platform refused connections: it is down or --apihost names the wrong port; start it and check with faasprof doctor"
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


def evaluate(rows: Iterable[Mapping[str, str]], thresholds: Mapping[str, float] | None = None,
             records: Mapping[str, Mapping] | None = None) -> dict:
    """Check a run's rows (``invocations.csv`` as dicts of strings) against the thresholds.

    ``records`` (activation id → activation record) refines accepted calls to their final outcome.

    Returns the manifest's ``verdict`` block: ``passed``, one ``message`` line, each threshold
    with its value, and the dominant failure with its count, share, a sample error and the fix.
    """
    limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    outcomes: Counter = Counter()
    kinds: Counter = Counter()
    samples: dict[tuple, str] = {}
    latency_ns: list[int] = []
    lateness_ns: list[int] = []
    instances: dict[str, _InstanceTally] = {}
    for row in rows:
        outcome = row["outcome"]
        record = (records or {}).get(row.get("activation_id") or "") if outcome in ACCEPTED_HTTP_OUTCOMES else None
        if record is not None:
            final = final_outcome(outcome, record)
            outcome = "ok" if final == "success" else final
        outcomes[outcome] += 1
        if row["sent_ns"] and row["intended_ns"]:
            lateness_ns.append(int(row["sent_ns"]) - int(row["intended_ns"]))
        if outcome == "not_sent":  # the run stopped first: its status says why, not a failed call
            continue
        tally = instances.setdefault(row.get("instance") or "", _InstanceTally())
        tally.attempted += 1
        if outcome == "ok":
            tally.ok += 1
            if row["sent_ns"] and row["done_ns"]:
                latency_ns.append(int(row["done_ns"]) - int(row["sent_ns"]))
            continue
        status = int(row["http_status"]) if row["http_status"] else None
        error = row.get("error") or ""
        if record is not None:  # the record, not the 202 or 502, says what went wrong
            status, error = None, _record_error(record)
        if tally.first_error is None:
            tally.first_error = _label(outcome, status) + (f": {error}" if error else "")
        # Failures are told apart by their fix: a refused connection and a reset one are both
        # "failed" without a status, but they mean different things.
        key = (outcome, status, failure_fix(outcome, status, error))
        kinds[key] += 1
        samples.setdefault(key, error)
    attempted = sum(count for outcome, count in outcomes.items() if outcome != "not_sent")
    ok = outcomes.get("ok", 0)
    failure_rate = (attempted - ok) / attempted if attempted else 0.0
    # The instance with the fewest successes decides (the first one named, on a tie).
    weakest = min(sorted(instances.items()), key=lambda item: item[1].ok, default=None)
    measured = {
        "min_successes": ok,
        "min_successes_per_instance": weakest[1].ok if weakest is not None else None,
        "max_failure_rate": round(failure_rate, 6),
        "max_client_latency_ms_p50": _ms(_percentile(latency_ns, 0.50)),
        "max_client_latency_ms_p99": _ms(_percentile(latency_ns, 0.99)),
        "max_lateness_ms_p99": _ms(_percentile(lateness_ns, 0.99)),
    }
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
        checks.append({"name": name, "limit": limit, "value": value, "passed": bool(passed),
                       "source": "default" if name in DEFAULT_THRESHOLDS and name not in (thresholds or {}) else "user"})
        if name == "min_successes_per_instance" and weakest is not None:
            checks[-1].update(instance=weakest[0], attempted=weakest[1].attempted, first_error=weakest[1].first_error)
    passed = all(check["passed"] for check in checks)
    dominant = None
    if kinds:
        (outcome, status, fix), count = kinds.most_common(1)[0]
        dominant = {"outcome": outcome, "http_status": status, "count": count, "share": round(count / attempted, 6) if attempted else None,
                    "error": samples[(outcome, status, fix)], "fix": fix}
    if passed:
        message = f"passed: {ok:,} of {attempted:,} attempted invocations succeeded"
    else:
        failed = [check for check in checks if not check["passed"]]
        if not ok:  # "no invocation succeeded" says it of every instance already
            failed = [check for check in failed if check["name"] != "min_successes_per_instance"] or failed
        what = "; ".join(_describe(check) for check in failed)
        message = f"failed: {what}"
        if dominant is not None:
            label = _label(dominant["outcome"], dominant["http_status"])
            message += f"; dominant failure: {label} in {dominant['count']:,} of {attempted:,}"
            message += f" ({dominant['error']})" if dominant["error"] else ""
            message += f"; fix: {dominant['fix']}"
    return {"format_version": VERDICT_FORMAT_VERSION, "passed": passed, "message": message, "thresholds": checks,
            "outcomes": dict(sorted(outcomes.items())), "attempted": attempted, "dominant_failure": dominant}


class _InstanceTally:
    """One instance's attempted invocations, those that succeeded, and its first failure."""

    def __init__(self) -> None:
        self.attempted = 0
        self.ok = 0
        self.first_error: str | None = None


def _label(outcome: str, status: int | None) -> str:
    return outcome + (f" (HTTP {status})" if status else "")


def _record_error(record: Mapping) -> str:
    result = (record.get("response") or {}).get("result")
    error = result.get("error") if isinstance(result, Mapping) else None
    return (error if isinstance(error, str) else str(error or ""))[:200]


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
    return f"{name.removeprefix('max_')} is {value} (threshold {limit:g})"


__all__ = ["DEFAULT_THRESHOLDS", "THRESHOLD_NAMES", "check_thresholds", "evaluate", "failure_fix", "parse_thresholds"]
