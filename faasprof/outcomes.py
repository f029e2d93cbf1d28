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

``PUSHBACK_KINDS`` (not a column: a reading of a row's outcome, status and error): how a platform
pushed back on calls it could not take. Refusals, stalls and 429/503 answers are data of an
over-invoked platform, not reasons to stop a run; ``pushback_kind`` names the kind of one row and
``pushback_line`` says what happened to a run ("over-invoked: of 2,372 planned calls, 38 % refused
at connect (901)"; "over-invoked" from ``OVER_INVOKED_SHARE`` of the calls turned away):

  refused          no connection: refused (or reset) while connecting; the request was never written
  connect_timeout  no connection within the connect timeout (a full accept queue drops the SYNs)
  reset            written, then the connection closed or was reset before the whole answer
  throttled        answered 429 Too Many Requests
  unavailable      answered 503 Service Unavailable (OpenWhisk: no healthy invoker)
  timeout          written, no answer within the request timeout (or a 408/504 answer)
  no_connection    never sent: still waiting for a connection when the run ended (every allowed one
                   busy or connecting)
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

# The kinds of pushback in the order ``pushback_line`` names them, each with its words there.
PUSHBACK_KINDS = {
    "refused": "refused at connect",
    "connect_timeout": "not accepted within the connect timeout",
    "reset": "cut off by a closed or reset connection",
    "throttled": "throttled with 429 Too Many Requests",
    "unavailable": "answered 503 Service Unavailable",
    "timeout": "timed out waiting for the answer",
    "no_connection": "never sent for want of a free connection",
}
# From this share of the planned calls turned away, a run that also got calls accepted is called
# over-invoked; below it, a stray reset or 429 is only "pushback", not a finding about the rate.
OVER_INVOKED_SHARE = 0.01
# The invoker's error texts that ``pushback_kind`` reads (the sender and dispatcher write them from these).
CONNECT_FAILED_TEXT = "cannot connect to "
CONNECT_TIMEOUT_TEXT = "timed out after"
REQUEST_TIMEOUT_TEXT = "no response within "
NO_CONNECTION_TEXT = "still waiting for a free connection"
STOPPED_IN_FLIGHT_TEXT = "no response before the run stopped"  # a call in flight when the run was stopped
CUT_OFF_TEXTS = ("connection closed before any response", "connection lost in the middle of the response")

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
# localwhisk's line in a failed activation's logs when its error names a /tmp path and its process
# sandbox shares the host's /tmp (no mount namespace): the verdict names that cause.
SHARED_TMP_FRAGMENT = "this sandbox shares /tmp with the others on this host"
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


def pushback_kind(outcome: str, http_status: int | None, written: bool, error: str | None) -> str | None:
    """The kind of pushback (``PUSHBACK_KINDS``) one row shows, or None (a success, an action's own
    failure, or faasprof's doing: a TLS misconfiguration, a run stopped by the user).

    ``written``: the request's bytes went out (the row has a ``sent_ns``). The error texts read
    here are the invoker's own (``faasprof.invoker.sender`` and ``dispatch``)."""
    if outcome == "throttled":
        return "throttled"
    if http_status == 503:
        return "unavailable"
    text = error or ""
    if outcome == "timeout":  # a 408/504 answer, or the request timeout (not a stop of the run)
        return "timeout" if http_status is not None or (written and text.startswith(REQUEST_TIMEOUT_TEXT)) else None
    if outcome == "not_sent":
        return "no_connection" if text.startswith(NO_CONNECTION_TEXT) else None
    if outcome != "failed" or http_status is not None:
        return None
    if not written:
        if CONNECT_TIMEOUT_TEXT in text:
            return "connect_timeout"
        return "refused" if text.startswith(CONNECT_FAILED_TEXT) else None
    return "reset" if text.startswith(CUT_OFF_TEXTS) else None


def pushback_line(kinds: Mapping[str, int], planned: int, accepted: int) -> str | None:
    """One line saying how the platform pushed back on a run's calls (None: it never did).
    ``kinds``: rows per pushback kind; ``planned``: the run's calls; ``accepted``: those the
    platform took (HTTP ``ok`` or ``app_error``), which tell over-invoking from a platform that took
    nothing."""
    parts = [
        f"{_percent(kinds[kind], planned)} {words} ({kinds[kind]:,})"
        for kind, words in PUSHBACK_KINDS.items()
        if kinds.get(kind)
    ]
    if not parts:
        return None
    if not accepted:
        head = "the platform took none of the calls"
    elif sum(kinds.values()) >= OVER_INVOKED_SHARE * planned:
        head = "over-invoked"
    else:
        head = "platform pushback"
    return f"{head}: of {planned:,} planned calls, " + ", ".join(parts)


def _percent(count: int, total: int) -> str:
    share = 100.0 * count / total if total else 0.0
    return f"{share:.0f} %" if share >= 10 or share == 0 else f"{share:.1g} %" if share < 1 else f"{share:.1f} %"
