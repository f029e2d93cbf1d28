"""The send loop's signals: the dispatcher run on a fresh event loop where SIGINT and SIGTERM stop
it in order (``send``), SIGTERM unwinding like Ctrl-C around the rest of a run
(``sigterm_as_interrupt``), and the event loop's name for the manifest (``loop_name``)."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

from faasprof.invoker.dispatch import Dispatcher, DispatchResult, new_event_loop
from faasprof.rundir import RunStatus

try:  # only to name the event loop in the manifest: uvloop is optional
    import uvloop  # noqa: F401
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    HAVE_UVLOOP = False
else:
    HAVE_UVLOOP = True


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C while the run lasts (and the previous handler comes back).
    Signal handlers can only be set from the main thread (a caller may run us in another one)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_term = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, term_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous_term)


def term_as_interrupt(signum, frame):  # outside the send loop, SIGTERM unwinds like Ctrl-C
    raise KeyboardInterrupt


def loop_name() -> str:
    return "uvloop" if HAVE_UVLOOP else "asyncio"


def send(dispatcher: Dispatcher, zero_ns: int) -> DispatchResult:
    """Run the dispatcher on a fresh event loop with SIGINT/SIGTERM stopping it in order."""
    loop = new_event_loop()
    installed = []
    previous_int = signal.getsignal(signal.SIGINT)
    try:
        for sig, label in ((signal.SIGINT, "Ctrl-C (SIGINT)"), (signal.SIGTERM, "SIGTERM")):
            try:
                loop.add_signal_handler(sig, dispatcher.request_stop, RunStatus.INTERRUPTED, f"{label} received")
                installed.append(sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
                pass
        return loop.run_until_complete(dispatcher.run(zero_ns))
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        loop.close()
        if installed:
            # uvloop leaves its own handler installed after remove_signal_handler: put ours back,
            # so a Ctrl-C while the activation records are saved still interrupts.
            signal.signal(signal.SIGINT, previous_int if previous_int is not None else signal.default_int_handler)
            signal.signal(signal.SIGTERM, term_as_interrupt)
