"""The outcome vocabulary: what happened to one planned invocation, decided once for every part.

Two levels, because the invoker sees only the HTTP exchange and the platform's activation record
says whether the function itself succeeded:

``HTTP_OUTCOMES`` (the ``outcome`` column of ``invocations.csv``, written by the invoker):

  ok          the platform accepted the call (2xx): a non-blocking 202 or a blocking 200
  app_error   a blocking call answered 502 (the action failed; the record says how)
  failed      no usable answer: refused connection, reset, 4xx/5xx other than 429/502
  throttled   429 Too Many Requests
  timeout     the client gave up waiting for the answer
  not_sent    never sent (the run stopped first, or no connection was free)
  unanswered  reconstructed after a crash: the send journal says it was sent, no answer was recorded
  unrecorded  reconstructed after a crash: planned (from the manifest), but neither a row nor a
              journal line survived (the crash's last second); it may or may not have been sent

``FINAL_OUTCOMES`` (the analyzer's ``final_outcome``, the HTTP outcome joined with the record):

  success          the activation record says success (statusCode 0)
  application_error  the function returned an ``error`` (statusCode 1)
  developer_error  the action crashed, returned bad JSON, failed /init (statusCode 2, not a timeout)
  internal_error   whisk internal error (statusCode 3)
  platform_stopped the platform was stopped before the activation completed (its record says so:
                   localwhisk's "localwhisk stopped before the activation completed."; faasprof
                   stops the platform it started only once its activations ended, unless the
                   wait for them was abandoned with Ctrl-C or gave up)
  action_timeout   the action exceeded its time limit (``timeout`` annotation, or statusCode 2 with
                   OpenWhisk's "exceeded its time limits" message)
  no_record        accepted (or answered 502) but no activation record was found
  throttled, failed, timeout, not_sent, unanswered, unrecorded
                   as the HTTP outcome (there is no record to consult)

Only ``success`` enters the latency statistics and latency modes of successful work; every other
final outcome is counted, and shown first when it happens.
"""

from __future__ import annotations

from typing import Any, Mapping

HTTP_OUTCOMES = ("ok", "app_error", "failed", "throttled", "timeout", "not_sent", "unanswered", "unrecorded")

# The order is the order of display: successes last, the failures a researcher must see first.
FINAL_OUTCOMES = (
    "application_error",
    "developer_error",
    "action_timeout",
    "internal_error",
    "platform_stopped",
    "no_record",
    "throttled",
    "timeout",
    "failed",
    "not_sent",
    "unanswered",
    "unrecorded",
    "success",
)
FAILURE_OUTCOMES = tuple(o for o in FINAL_OUTCOMES if o != "success")

# HTTP outcomes after which the platform holds an activation record to consult.
ACCEPTED_HTTP_OUTCOMES = ("ok", "app_error")

STATUS_CODE_OUTCOMES = {0: "success", 1: "application_error", 2: "developer_error", 3: "internal_error"}
STATUS_TEXT_OUTCOMES = {
    "success": "success",
    "application error": "application_error",
    "action developer error": "developer_error",
    "whisk internal error": "internal_error",
}

# OpenWhisk's message for an action that ran past its limit ("The action exceeded its time limits
# of 60000 milliseconds." / "... during initialization.").
TIMEOUT_MESSAGE_FRAGMENT = "exceeded its time limits"
# localwhisk's message for an activation still queued or running when it stopped ("localwhisk
# stopped before the activation completed."), a whisk internal error in its record.
STOPPED_MESSAGE_FRAGMENT = "stopped before the activation completed"


def record_outcome(record: Mapping[str, Any]) -> str:
    """The final outcome an activation record states (one of the record-level outcomes)."""
    response = record.get("response") or {}
    if _annotation(record, "timeout") is True:
        return "action_timeout"
    code = response.get("statusCode", record.get("statusCode"))
    outcome = STATUS_CODE_OUTCOMES.get(code) if isinstance(code, int) else None
    if outcome is None:
        status = response.get("status")
        if isinstance(status, str):
            outcome = STATUS_TEXT_OUTCOMES.get(status.lower())
    if outcome is None:
        outcome = "success" if response.get("success") is True else "internal_error"
    return refined_outcome(outcome, _error_text(response))


def refined_outcome(outcome: str, error: str) -> str:
    """What a record's status and error text say together: OpenWhisk's time-limit message makes a
    developer error an ``action_timeout``, localwhisk's stop message an internal error ``platform_stopped``."""
    if outcome == "developer_error" and TIMEOUT_MESSAGE_FRAGMENT in error:
        return "action_timeout"
    if outcome == "internal_error" and STOPPED_MESSAGE_FRAGMENT in error:
        return "platform_stopped"
    return outcome


def final_outcome(http_outcome: str, record: Mapping[str, Any] | None) -> str:
    """Join the invoker's HTTP outcome with the activation record (None when there is none)."""
    if http_outcome not in HTTP_OUTCOMES:
        raise ValueError(f"unknown HTTP outcome {http_outcome!r} (expected one of {', '.join(HTTP_OUTCOMES)})")
    if http_outcome in ACCEPTED_HTTP_OUTCOMES:
        return record_outcome(record) if record is not None else "no_record"
    # A record may still exist for a client timeout or a send cut off by a crash (the platform ran
    # it): it says what happened.
    if http_outcome in ("timeout", "unanswered") and record is not None:
        return record_outcome(record)
    return http_outcome


def _annotation(record: Mapping[str, Any], key: str) -> Any:
    for item in record.get("annotations") or ():
        if isinstance(item, Mapping) and item.get("key") == key:
            return item.get("value")
    return None


def _error_text(response: Mapping[str, Any]) -> str:
    result = response.get("result")
    if isinstance(result, Mapping):
        error = result.get("error")
        return error if isinstance(error, str) else str(error or "")
    return ""
