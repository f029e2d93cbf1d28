"""One activation as localwhisk's pool runs it: the action, the job, how it ended (``Outcome``),
OpenWhisk's messages for each way it can end, and why a sandbox went (for the log and the record).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from faasprof.localwhisk import fastjson
from faasprof.localwhisk.sandbox import Sandbox, SandboxDied, format_log_line
from faasprof.outcomes import SHARED_TMP_FRAGMENT

# OpenWhisk Messages (common/scala/.../http/ErrorResponse.scala).
ABNORMAL_INIT = "The action did not initialize and exited unexpectedly."
ABNORMAL_RUN = "The action did not produce a valid response and exited unexpectedly."
MEMORY_EXHAUSTED = "The action exhausted its memory and was aborted."
PROVISION_ERROR = "Failed to provision resources to run the action."
STOPPED_ERROR = "localwhisk stopped before the activation completed."

STATUS_NAMES = {0: "success", 1: "application error", 2: "action developer error", 3: "whisk internal error"}


def internal_error_message(error: Exception) -> str:
    """A whisk internal error's message for an activation localwhisk itself failed to carry out."""
    return f"localwhisk failed to carry out the activation ({type(error).__name__}: {str(error)[:200]}); see localwhisk.log."


def truncated_response_message(result: object, size: int, limit: int) -> str:
    """OpenWhisk's application error for a result over ``limit`` bytes, with its first ``limit``
    bytes (a character the cut splits is left out)."""
    head = fastjson.dumps(result)[:limit].decode("utf-8", "ignore")
    return (
        f"The action produced a response that exceeded the allowed length: {size} > {limit} bytes. "
        f"The truncated response was: {head}"
    )


def timed_out_message(timeout_ms: int, init: bool) -> str:
    return f"The action exceeded its time limits of {timeout_ms} milliseconds" + (
        " during initialization." if init else "."
    )


@dataclass
class Action:
    """An action as the pool needs it (a snapshot taken at invocation)."""

    namespace: str
    name: str  # [package/]name
    version: str
    rev: str  # unique per PUT (also across delete and re-create)
    kind: str
    code: str
    binary: bool
    main: str
    memory_mb: int
    timeout_ms: int
    logs_mb: int
    concurrency: int
    init_env: dict
    api_key: str | None = None

    @property
    def key(self) -> tuple:
        # The memory limit is part of the key on its own account: a sandbox's size is fixed.
        return (self.namespace, self.name, self.rev, self.memory_mb)

    @property
    def path(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def limits(self) -> dict:
        return {
            "concurrency": self.concurrency,
            "logs": self.logs_mb,
            "memory": self.memory_mb,
            "timeout": self.timeout_ms,
        }


@dataclass(eq=False)
class Job:
    activation_id: str
    action: Action
    params: dict
    accepted_ns: int  # monotonic, when the HTTP request was accepted
    transaction_id: str
    subject: str
    future: asyncio.Future | None = None
    container_state: str = ""


@dataclass
class Outcome:
    status_code: int = 0
    result: object = field(default_factory=dict)
    size: int | None = None
    timed_out: bool = False
    wait_end_ns: int | None = None
    init_start_ns: int | None = None
    init_end_ns: int | None = None
    run_start_ns: int | None = None
    run_end_ns: int | None = None
    run_cpu_ns: int | None = None  # the sandbox's CPU time during the run call, where it can be read
    logs: list = field(default_factory=list)
    destroy: bool = False


def shared_tmp_hint(tmp: str, error: object) -> str | None:
    """The line a failed activation's record gets when its error names a /tmp path and its
    sandbox shares the host's /tmp (``tmp`` is the sandbox's ``private`` or ``shared: why``)."""
    if tmp == "private" or "/tmp/" not in str(error):
        return None
    return (
        f"localwhisk: {SHARED_TMP_FRAGMENT} ({tmp.removeprefix('shared: ')}): a fixed /tmp name "
        "collides between concurrent calls, unlike in OpenWhisk's containers; run localwhisk as root (a /tmp per sandbox) or isolation docker"
    )


def why_gone(sb: Sandbox) -> str:
    """Why a sandbox is gone, for localwhisk.log and the record: who removed it, or how it died."""
    if sb.death_reason:
        return sb.death_reason
    if sb.oom:
        return "killed by the kernel for exceeding its memory limit (OOM)"
    if sb.exit_status is not None and sb.exit_status < 0:
        return f"killed by signal {-sb.exit_status}, not by localwhisk"
    if sb.exit_status is not None and sb.exit_status > 128:
        return f"exited with status {sb.exit_status} (killed by signal {sb.exit_status - 128}, not by localwhisk)"
    if sb.exit_status is not None:
        return f"exited by itself, status {sb.exit_status}"
    return "removed by localwhisk"


def developer_error(out: Outcome, message: str, timed_out: bool = False) -> None:
    """The activation failed by the action's fault (status 2): its sandbox is destroyed."""
    out.status_code, out.result, out.timed_out, out.destroy = 2, {"error": message}, timed_out, True


def request_failed(out: Outcome, sb: Sandbox, error: TimeoutError | SandboxDied, timeout_ms: int, init: bool) -> None:
    """An init or run that timed out or whose sandbox died, with OpenWhisk's message for each;
    the logs the action wrote before are kept."""
    if isinstance(error, TimeoutError):
        developer_error(out, timed_out_message(timeout_ms, init), timed_out=True)
    else:
        developer_error(out, MEMORY_EXHAUSTED if sb.oom else ABNORMAL_INIT if init else ABNORMAL_RUN)
    out.logs += sb.take_logs()
    if isinstance(error, SandboxDied):
        # The record says why its sandbox died (the action's own lines above say what it did).
        out.logs.append(
            format_log_line(
                time.time_ns(),
                "stderr",
                f"localwhisk: sandbox {sb.name} died during the {'init' if init else 'run'}: {sb.death_reason or error}",
            )
        )
