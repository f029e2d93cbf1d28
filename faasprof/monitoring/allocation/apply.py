"""One allocation applied for the length of a block and the previous one always put back.

``Allocation`` holds a Ctrl-C back while it applies or restores (a step must not stop half-way),
journals every step in its state file (``journal``), has the backend of ``caps.interface`` do the
host's side (``resctrl``, ``pqos``) and checks what the hardware read back against the plan:
that read-back, not the request, is what goes into the manifest.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any, Iterator

from faasprof.errors import ConfigError, NotReadyError, RunError
from faasprof.monitoring.allocation import pqos, resctrl
from faasprof.monitoring.allocation.journal import Journal, default_state_dir
from faasprof.monitoring.allocation.model import (
    GROUP_PREFIX,
    PQOS_TIMEOUT_S,
    Capabilities,
    Readback,
    Runner,
    format_cpu_list,
    run_subprocess,
)
from faasprof.monitoring.allocation.plan import AllocationPlan
from faasprof.monitoring.allocation.restore import restore_from_state


class Allocation:
    """Apply one plan and restore the previous allocation whatever happens.

    As a context manager it applies on entry (``.applied`` is the read-back, for the manifest)
    and restores on exit: at the end, on an exception, on KeyboardInterrupt. ``apply()`` and
    ``restore()`` can also be called directly; ``restore()`` is safe to call twice.
    """

    def __init__(
        self,
        caps: Capabilities,
        plan: AllocationPlan,
        *,
        name: str | None = None,
        state_dir: str | os.PathLike | None = None,
        fs: resctrl.ResctrlFs | None = None,
        runner: Runner | None = None,
        pqos_reset: bool = False,
        timeout_s: float = PQOS_TIMEOUT_S,
    ):
        if caps.interface is None:
            raise NotReadyError(f"cannot allocate: {caps.reason}")
        self.caps = caps
        self.plan = plan
        self.name = name or f"{GROUP_PREFIX}{os.getpid()}"
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.name) or self.name in resctrl.NOT_GROUPS:
            raise ConfigError(f"allocation group name {self.name!r}: use letters, digits, '.', '_' or '-'")
        self.state_path = Path(state_dir or default_state_dir()) / f"allocation-{os.getpid()}-{self.name}.json"
        self.fs = fs or resctrl.ResctrlFs()
        self.runner = runner or run_subprocess
        self.pqos_reset = pqos_reset
        self.timeout_s = timeout_s
        self.applied: dict[str, Any] | None = None
        self._journal = Journal(self.state_path, interface=caps.interface, name=self.name, plan=plan.to_dict())

    # context manager ----------------------------------------------------------------------
    def __enter__(self) -> "Allocation":
        try:
            self.apply()
        except BaseException:
            # __exit__ is not called when __enter__ raises: undo what was done here.
            self.restore()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.restore()

    # apply --------------------------------------------------------------------------------
    def apply(self) -> dict[str, Any]:
        """Apply the plan; returns (and keeps in ``.applied``) what the hardware reports."""
        if self._journal.state is not None:
            raise RuntimeError("allocation already applied")
        with _sigint_deferred():
            try:
                if self.caps.interface == "resctrl":
                    readback = resctrl.apply(self.caps, self.plan, self.name, self.fs, self._journal)
                else:
                    readback = pqos.apply(
                        self.caps, self.plan, self.runner, self.timeout_s, self.pqos_reset, self._journal
                    )
                self.applied = self._checked(readback)
            except OSError as exc:
                raise RunError(
                    f"{exc.filename or self.name}: {exc.strerror or exc} while applying the allocation"
                ) from None
            self._journal.applied(self.applied)
        return self.applied

    def _checked(self, readback: Readback) -> dict[str, Any]:
        """The manifest's ``applied``; RunError when the hardware did not take the plan."""
        masks, percents, cpus, where = readback.masks, readback.percents, readback.cpus, readback.where
        applied = {
            "interface": self.caps.interface,
            "llc_masks": {str(i): f"0x{m:x}" for i, m in sorted(masks.items())},
            "llc_ways": {str(i): bin(m).count("1") for i, m in sorted(masks.items())},
            "mba_percent": {str(i): p for i, p in sorted(percents.items())},
            "cpus": format_cpu_list(cpus),
            "requested": self.plan.to_dict(),
            "notes": list(self.plan.notes),
            **readback.extra,
        }
        if self.plan.l3_mask is not None:
            wrong = {i: m for i, m in masks.items() if m != self.plan.l3_mask}
            if wrong or not masks:
                raise RunError(
                    f"{where}: L3 reads back as {applied['llc_masks']} instead of 0x{self.plan.l3_mask:x} on every cache id"
                )
        if self.plan.mba_percent is not None:
            if not percents:
                raise RunError(f"{where}: no MB values read back after writing {self.plan.mba_percent} %")
            if any(p != self.plan.mba_percent for p in percents.values()):
                # The kernel or pqos rounded differently from our rule: record the truth, go on.
                applied["notes"].append(
                    f"the hardware applied MB {applied['mba_percent']} for a request of {self.plan.mba_percent}"
                )
        missing = set(self.plan.cpus) - set(cpus)
        if missing:
            raise RunError(
                f"{where}: CPU(s) {format_cpu_list(missing)} did not join the allocation (read back: {format_cpu_list(cpus)})"
            )
        return applied

    # restore ------------------------------------------------------------------------------
    def restore(self) -> list[str]:
        """Put the previous allocation back; returns what was done (one line each). Idempotent."""
        if self._journal.state is None:
            return []
        with _sigint_deferred():
            try:
                messages = restore_from_state(
                    self._journal.state, fs=self.fs, runner=self.runner, timeout_s=self.timeout_s
                )
            except (OSError, RunError) as exc:
                # The state file stays: the next faasprof start (cleanup_leftovers) tries again.
                detail = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) else str(exc)
                raise RunError(
                    f"could not restore the previous allocation ({detail}); faasprof retries at its next start"
                    f" from {self.state_path}"
                ) from None
            self._journal.close()  # last: a crash before this line is finished by cleanup_leftovers
        return messages


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C back until the block is done (apply or restore must not stop half-way)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            if callable(previous):
                previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt here
            elif previous == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)  # what would have happened without us
