"""One send process of the multi-process send mode (``faasprof.invoker.shards``): ``python -m faasprof.invoker.shard_child``.

It reads its share from stdin (a length-prefixed pickle: the parent's ``FRAME``, then the seqs,
plan slice, prepared requests and options), opens its invocation log in ``shards/<k>/``, says
``ready`` on stdout, waits for the run's monotonic zero, and sends its share open-loop with the
ordinary ``Dispatcher``, writing rows and journal lines under the plan's seq numbers. While it
sends it listens on stdin for ``{"stop": [status, reason]}``; the end of stdin means the parent is
gone, and it stops. It ignores Ctrl-C (the parent decides) and leaves its summary in
``result.json``. It speaks on stderr only for a warning about itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import struct
import sys
import time
from pathlib import Path

from faasprof import rundir
from faasprof.invoker.dispatch import Dispatcher, DispatchOptions, DispatchResult, new_event_loop
from faasprof.invoker.sender import ensure_fd_budget
from faasprof.progress import WARNING_PREFIX, Progress
from faasprof.rundir import RunStatus

FRAME = struct.Struct("!Q")  # the share's length, before its pickle on the child's stdin


def child_main() -> int:
    """A send process: read the share, open the log, say ready, wait for the zero, send, report."""
    stdin = sys.stdin.buffer
    header = stdin.read(FRAME.size)
    if len(header) != FRAME.size:
        return 2
    share = pickle.loads(stdin.read(FRAME.unpack(header)[0]))
    index, processes = share["index"], share["processes"]
    label = f"send process {index + 1} of {processes}"

    def say_warning(line: str) -> None:
        # The parent prints the run's progress; a child speaks only when something is wrong with it.
        if line.startswith(WARNING_PREFIX):
            print(f"{label} (pid {os.getpid()}): {line}", file=sys.stderr, flush=True)

    directory = Path(share["directory"])
    seqs = share["seqs"].tolist()
    log = rundir.InvocationLog(directory)
    options = DispatchOptions(**share["options"])
    append, sent = log.append, log.sent

    def row_sink(row: tuple) -> None:
        append((seqs[row[0]],) + row[1:])

    def journal(seq: int, sent_ns: int) -> None:
        sent(seqs[seq], sent_ns)

    dispatcher = Dispatcher(
        share["intended_ns"],
        share["instance_idx"],
        share["instances"],
        share["requests"],
        row_sink,
        options,
        checks=[lambda: (RunStatus.ABORTED, log.error) if log.error is not None else None],
        progress=Progress(say_warning),
        duration_s=share["duration_s"],
        journal=journal,
    )
    ensure_fd_budget(options.max_connections, origins=len({r.origin for r in share["requests"]}))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it tells us on stdin
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    line = stdin.readline()
    if not line:
        log.close()
        return 1  # the parent went away before the zero: nothing was sent
    zero_ns = int(json.loads(line)["zero_ns"])
    loop = new_event_loop()
    control = _Control(dispatcher, stdin.fileno(), loop)
    loop.add_reader(stdin.fileno(), control.readable)
    cpu0 = time.process_time()
    status: RunStatus = RunStatus.INTERRUPTED
    reason: str | None = None
    result: DispatchResult | None = None
    try:
        result = loop.run_until_complete(dispatcher.run(zero_ns))
        status, reason = result.status, result.reason
    except Exception as error:  # still leave every row of the share
        status, reason = RunStatus.INTERRUPTED, f"send process failed: {type(error).__name__}: {error}"
        dispatcher.close_after_failure(status, reason)
    finally:
        loop.remove_reader(stdin.fileno())
        loop.close()
        log.close()
    cpu_s = time.process_time() - cpu0
    summary = {
        "status": status if log.error is None else RunStatus.ABORTED,
        "reason": reason if log.error is None else log.error,
        "cpu_s": round(cpu_s, 4),
        "pid": os.getpid(),
    }
    if result is not None:
        summary.update(result.describe())
        summary["status"], summary["reason"] = (status, reason) if log.error is None else (RunStatus.ABORTED, log.error)
        summary["cpu_s"] = round(cpu_s, 4)
    rundir.write_json_atomic(directory / "result.json", summary)
    return 0


class _Control:
    """The child's end of the control pipe: stop requests, and the parent's death (end of file)."""

    def __init__(self, dispatcher: Dispatcher, fd: int, loop: asyncio.AbstractEventLoop):
        self.dispatcher, self.fd, self.loop, self.buffer = dispatcher, fd, loop, b""
        os.set_blocking(fd, False)

    def readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.loop.remove_reader(self.fd)
            self.dispatcher.request_stop(
                RunStatus.INTERRUPTED, "the parent faasprof process is gone (killed?); this send process stopped"
            )
            return
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "stop" in message:
                status, reason = message["stop"]
                self.dispatcher.request_stop(RunStatus(status), reason)


if __name__ == "__main__":
    sys.exit(child_main())
