"""Running a function natively: the same code, outside any platform, in a long-lived worker process.

A worker is the function's interpreter (this Python, or ``node``) running ``faasprof/functions/runners/*``
with the manifest's ``native`` command: it imports the function once and then serves one call per
request line, like a warm container (its first call is the native analogue of a cold start).
``call_once`` serves tests and quick checks; ``run_native`` writes a run directory:

::

    runs/native-<function>-<stamp>/
      manifest.json     with a ``native`` block (command, interpreter, repeat, concurrency,
                        summary, optional perf counts) and ``platform: {"kind": "native"}``
      invocations.csv   one row per repeat (outcome ok / app_error / failed / timeout / not_sent)
      native.csv        per repeat: worker, cold, execution time measured inside the worker, round
                        trip, CPU time and the kernel's software counters (rusage deltas)
      native/           each worker's stdout and stderr (never discarded)
      monitors/perf-native/  perf stat output per worker, when --perf is given

native.csv format versions (``NATIVE_FORMAT_VERSION``): 1: first version.
"""

from __future__ import annotations

import csv
import json
import os
import queue
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

from faasprof.errors import ConfigError, NotReadyError, RunError
from faasprof.functions.catalogue import RUNNERS_DIR, FunctionEntry
from faasprof.functions.own import python_site_dirs
from faasprof.monitoring.collectors import tool_versions
from faasprof.monitoring.collectors.perf import perf_readiness
from faasprof.monitoring.host import collect_host
from faasprof.monitoring.parsers.perf import perf_counts
from faasprof.progress import QUIET, Progress
from faasprof.rundir import (
    CLOSED_LOOP,
    NATIVE_PLATFORM_KIND,
    ClockAnchor,
    InvocationLog,
    RunStatus,
    create_run_dir,
    monitor_dir,
    new_manifest,
    read_manifest,
    write_manifest,
)

NATIVE_FORMAT_VERSION = 1
NATIVE_CSV = "native.csv"
NATIVE_COLUMNS = (
    "seq",
    "worker",
    "call_in_worker",
    "cold",
    "sent_ns",
    "done_ns",
    "exec_ms",
    "round_trip_ms",
    "outcome",
    "cpu_user_ms",
    "cpu_sys_ms",
    "minflt",
    "majflt",
    "nvcsw",
    "nivcsw",
    "result_bytes",
    "error",
)
START_TIMEOUT_S = 60.0
DEFAULT_PERF_EVENTS = (
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "minor-faults",
    "major-faults",
)


class WorkerDied(Exception):
    pass


class CallTimeout(Exception):
    pass


def native_command(entry: FunctionEntry) -> list[str]:
    """The manifest's native command with its placeholders filled in."""
    node = shutil.which("node")
    values = {
        "python": sys.executable,
        "node": node or "node",
        "runners": str(RUNNERS_DIR),
        "dir": str(entry.directory),
    }
    return [part.format(**values) for part in entry.native]


def interpreter_version(entry: FunctionEntry) -> str:
    if entry.runtime == "python":
        return f"python {sys.version.split()[0]} ({sys.executable})"
    try:
        out = subprocess.run([shutil.which("node") or "node", "--version"], capture_output=True, text=True, timeout=10)
        return f"node {out.stdout.strip()}"
    except (OSError, subprocess.TimeoutExpired):
        return "node (version unknown)"


class Worker:
    """One interpreter process serving calls of one function over a result pipe."""

    def __init__(
        self,
        entry: FunctionEntry,
        index: int = 0,
        log_dir: Path | None = None,
        perf_output: Path | None = None,
        perf_events: tuple[str, ...] = DEFAULT_PERF_EVENTS,
    ):
        self.entry = entry
        self.index = index
        self.log_dir = log_dir
        self.perf_output = perf_output
        self.perf_events = perf_events
        self.process: subprocess.Popen | None = None
        self.calls = 0
        self.starts = 0
        self.ready: dict = {}
        self._read_fd: int | None = None
        self._buffer = b""
        self._logs: list[IO[bytes]] = []

    @property
    def command(self) -> list[str]:
        command = native_command(self.entry)
        if self.perf_output is not None:
            output = (
                self.perf_output
                if self.starts <= 1
                else self.perf_output.with_name(f"{self.perf_output.stem}-{self.starts}{self.perf_output.suffix}")
            )
            command = ["perf", "stat", "-x", ",", "-e", ",".join(self.perf_events), "-o", str(output), "--"] + command
        return command

    def start(self, timeout_s: float = START_TIMEOUT_S) -> dict:
        """Start the process and wait for its ready line; raises RunError if the function cannot load."""
        self.starts += 1
        self.calls = 0
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env["FAASPROF_RESULT_FD"] = str(write_fd)
        env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
        sites = [str(path) for path in python_site_dirs(self.entry.directory)] if self.entry.runtime == "python" else []
        if sites:
            # A function's requirements.txt packages, installed in its virtualenv/ as OpenWhisk's runtime expects.
            env["PYTHONPATH"] = os.pathsep.join(sites + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        modules = self.entry.node_modules
        if modules is not None:
            # A catalogue function's npm packages live in the user's cache, not beside its code.
            env["NODE_PATH"] = os.pathsep.join([str(modules)] + ([env["NODE_PATH"]] if env.get("NODE_PATH") else []))
        stdout: IO[bytes]
        stderr: IO[bytes]
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            suffix = "" if self.starts == 1 else f"-{self.starts}"
            stdout = open(self.log_dir / f"worker-{self.index}{suffix}.stdout.log", "wb")
            stderr = open(self.log_dir / f"worker-{self.index}{suffix}.stderr.log", "wb")
        else:
            stdout, stderr = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self._logs = [stdout, stderr]
        try:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=stderr,
                pass_fds=(write_fd,),
                env=env,
                cwd=str(self.entry.directory),
                start_new_session=True,
            )
        except OSError as error:
            os.close(read_fd)
            raise NotReadyError(f"{self.entry.base}: cannot start {self.command[0]} ({error.strerror})") from None
        finally:
            os.close(write_fd)
        self._read_fd = read_fd
        self._buffer = b""
        try:
            ready = self._read_message(timeout_s)
        except (WorkerDied, CallTimeout) as error:
            detail = self.stderr_tail()
            self.stop()
            raise RunError(
                f"{self.entry.base}: the native worker did not start ({error}){': ' + detail if detail else ''}"
            ) from None
        if not ready.get("ready"):
            self.stop()
            raise RunError(f"{self.entry.base}: cannot load the function: {ready.get('error')}")
        self.ready = ready
        return ready

    def _read_message(self, timeout_s: float | None) -> dict:
        read_fd = self._read_fd
        if read_fd is None:
            raise WorkerDied("the worker is not running")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([read_fd], [], [], wait)
            if not readable:
                raise CallTimeout(f"no answer within {timeout_s:g} s")
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                code = self.process.wait(timeout=5) if self.process else None
                raise WorkerDied(f"the worker exited (status {code})")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def call(self, params: dict, timeout_s: float | None = None) -> dict:
        """One call; returns the worker's answer (ok, error, exec_ns, rusage, result, ...).

        Raises WorkerDied when the process exits mid-call and CallTimeout after ``timeout_s``;
        the worker must then be restarted."""
        process = self.process
        if process is None or process.poll() is not None or process.stdin is None:
            raise WorkerDied("the worker is not running")
        try:
            process.stdin.write((json.dumps({"params": params}) + "\n").encode())
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied("the worker exited") from None
        answer = self._read_message(timeout_s)
        self.calls += 1
        answer["cold"] = self.calls == 1
        answer["call_in_worker"] = self.calls
        return answer

    def stderr_tail(self, limit: int = 300) -> str:
        if len(self._logs) < 2:
            return ""
        try:
            handle = self._logs[1]
            handle.flush()
            with open(handle.fileno(), "rb", closefd=False) as raw:
                raw.seek(0)
                text = raw.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return text.splitlines()[-1][:limit] if text else ""

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close stdin (the runner exits), then terminate, then kill. Safe twice."""
        process, self.process = self.process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.close()
            except OSError:
                pass
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self._read_fd is not None:
            os.close(self._read_fd)
            self._read_fd = None
        for handle in self._logs:
            handle.close()
        self._logs = []

    def kill(self) -> None:
        """Stop a worker stuck in a call: kill its whole process group now."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
        self.stop(timeout_s=1.0)


def call_once(
    entry: FunctionEntry, params: dict | None = None, timeout_s: float | None = None, progress: Progress = QUIET
) -> dict:
    """Start a worker, call the function once with ``params`` (default: its sample input), stop.

    Returns the worker's answer: ``ok``, ``result``, ``error``, ``exec_ns``, ``rusage``. The npm
    packages it needs are installed into the cache first (said on ``progress``)."""
    entry.install_packages(progress)
    entry.require_available()
    worker = Worker(entry)
    worker.start()
    try:
        return worker.call(entry.sample_params() if params is None else params, timeout_s or entry.timeout_ms / 1000)
    finally:
        worker.stop()


# -- perf ---------------------------------------------------------------------------------------


def check_perf(events: tuple[str, ...] = DEFAULT_PERF_EVENTS) -> str | None:
    """None when ``perf stat`` counts every one of ``events`` for a command here; else a one-line
    reason with the fix (``faasprof.monitoring.collectors.perf.perf_readiness`` decides)."""
    return perf_readiness(events, system_wide=False).problem("drop --perf", require_all=True)


# -- run directories ----------------------------------------------------------------------------


@dataclass
class NativeOptions:
    repeat: int = 10
    concurrency: int = 1
    warmup: int = 0
    params: dict | None = None
    params_source: str = "sample"
    perf: bool = False
    perf_events: tuple[str, ...] = DEFAULT_PERF_EVENTS
    timeout_s: float | None = None
    extra_manifest: dict = field(default_factory=dict)


def _host_metadata() -> dict:
    """Host facts and tool versions, as ``faasprof run`` records them."""
    try:
        return {"host": collect_host(), "tools": tool_versions()}
    except Exception as error:  # host metadata must never stop a measurement
        return {"host": {"error": f"{type(error).__name__}: {error}"}}


def summarise(rows: list[dict]) -> dict:
    ok = [row["exec_ms"] for row in rows if row["outcome"] == "ok" and row["exec_ms"] != ""]
    outcomes: dict[str, int] = {}
    for row in rows:
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    summary: dict = {"calls": len(rows), "outcomes": outcomes}
    if ok:
        ordered = sorted(ok)
        summary["exec_ms"] = {
            "mean": round(statistics.fmean(ok), 4),
            "median": round(statistics.median(ok), 4),
            "min": round(ordered[0], 4),
            "max": round(ordered[-1], 4),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 4),
            "stdev": round(statistics.stdev(ok), 4) if len(ok) > 1 else 0.0,
        }
        warm = [row["exec_ms"] for row in rows if row["outcome"] == "ok" and not row["cold"]]
        if warm:
            summary["warm_exec_ms_median"] = round(statistics.median(warm), 4)
    return summary


def run_native(
    entry: FunctionEntry,
    out_dir: str | os.PathLike,
    options: NativeOptions,
    progress: Callable[[str], None] | None = None,
) -> tuple[Path, dict]:
    """Run ``entry`` natively ``options.repeat`` times over ``options.concurrency`` workers.

    Returns (run directory, summary). Every planned call has one row in invocations.csv and in
    native.csv whatever happens; a worker that dies or times out is restarted (its next call is
    cold again). Raises NotReadyError before creating anything if the function or perf cannot run.
    The npm packages the function needs are installed into the cache first, said on ``progress``.
    """
    _check_ready(entry, options, progress)
    params = entry.sample_params() if options.params is None else options.params
    timeout_s = options.timeout_s or entry.timeout_ms / 1000
    run_dir, clock = _start_run(entry, out_dir, options, params, timeout_s)
    perf_dir = monitor_dir(run_dir, "perf-native") if options.perf else None
    workers = [
        Worker(
            entry,
            index,
            log_dir=run_dir / "native",
            perf_output=(perf_dir / f"worker-{index}.csv") if perf_dir else None,
            perf_events=options.perf_events,
        )
        for index in range(options.concurrency)
    ]
    calls = _Calls(entry, options, params, timeout_s, InvocationLog(run_dir), clock, progress or (lambda message: None))
    status = _drive(workers, calls)
    # Every planned call gets a row: the ones no worker took were never sent.
    reason = (
        "interrupted"
        if status == RunStatus.INTERRUPTED
        else (calls.start_errors[0] if calls.start_errors else "no worker left")
    )
    calls.record_unsent(workers[0].index, reason)
    calls.log.close()
    if calls.start_errors and status == RunStatus.COMPLETE:
        status = RunStatus.ABORTED

    rows = sorted(calls.rows, key=lambda row: row["seq"])
    _write_native_csv(run_dir, rows)
    summary = summarise(rows)
    if calls.start_errors:
        summary["worker_errors"] = calls.start_errors
    _finish_manifest(run_dir, options, status, rows, summary, workers, perf_dir)
    return run_dir, summary


def _check_ready(entry: FunctionEntry, options: NativeOptions, progress: Callable[[str], None] | None) -> None:
    """Refuse bad options (ConfigError) and a function or perf that cannot run here (NotReadyError)."""
    if options.repeat < 1:
        raise ConfigError(f"--repeat: must be >= 1 (got {options.repeat})")
    if options.concurrency < 1:
        raise ConfigError(f"--concurrency: must be >= 1 (got {options.concurrency})")
    if options.warmup < 0:
        raise ConfigError(f"--warmup: must be >= 0 (got {options.warmup})")
    entry.install_packages(Progress(progress))
    entry.require_available()
    if options.perf:
        reason = check_perf(options.perf_events)
        if reason:
            raise NotReadyError(reason)


def _start_run(
    entry: FunctionEntry, out_dir: str | os.PathLike, options: NativeOptions, params: dict, timeout_s: float
) -> tuple[Path, ClockAnchor]:
    """Create the run directory and write its first manifest (the ``native`` block, ``planned``)."""
    test_name = f"native-{entry.name}"
    run_dir = create_run_dir(out_dir, test_name)
    clock = ClockAnchor()
    workload = {
        "test_name": test_name,
        "native": True,
        # Blocking: each call is answered when the function returns (its round trip is its latency).
        "instances": [
            {
                "name": entry.name,
                "function": entry.name,
                "endpoint": "native",
                "distribution": CLOSED_LOOP,
                "repeat": options.repeat,
                "concurrency": options.concurrency,
                "memory_mb": None,
                "blocking": True,
            }
        ],
    }
    native_block = {
        "format_version": NATIVE_FORMAT_VERSION,
        "function": entry.describe(),
        "command": native_command(entry),
        "interpreter": interpreter_version(entry),
        "repeat": options.repeat,
        "concurrency": options.concurrency,
        "warmup": options.warmup,
        "timeout_s": timeout_s,
        "params": {"source": options.params_source, "keys": sorted(params)},
        "files": {"native_csv": NATIVE_CSV, "worker_logs": "native/"},
        "perf": None,
    }
    manifest = new_manifest(
        test_name,
        workload,
        clock,
        platform={"kind": NATIVE_PLATFORM_KIND, "apihost": None},
        native=native_block,
        **_host_metadata(),
        **options.extra_manifest,
    )
    manifest.counts["planned"] = options.repeat
    write_manifest(run_dir, manifest)
    return run_dir, clock


def _native_row(seq: int, worker_index: int, sent_ns, done_ns, outcome: str, answer: dict | None, error: str) -> dict:
    """One call's row of native.csv (empty strings where the call gave no value)."""
    usage = (answer or {}).get("rusage") or {}
    return {
        "seq": seq,
        "worker": worker_index,
        "call_in_worker": (answer or {}).get("call_in_worker", ""),
        "cold": bool((answer or {}).get("cold", False)),
        "sent_ns": sent_ns,
        "done_ns": done_ns,
        "exec_ms": round(answer["exec_ns"] / 1e6, 4) if answer and "exec_ns" in answer else "",
        "round_trip_ms": round((done_ns - sent_ns) / 1e6, 4) if sent_ns != "" and done_ns != "" else "",
        "outcome": outcome,
        "cpu_user_ms": usage.get("user_ms", ""),
        "cpu_sys_ms": usage.get("sys_ms", ""),
        "minflt": usage.get("minflt", ""),
        "majflt": usage.get("majflt", ""),
        "nvcsw": usage.get("nvcsw", ""),
        "nivcsw": usage.get("nivcsw", ""),
        "result_bytes": (answer or {}).get("result_bytes", ""),
        "error": error[:300],
    }


class _Calls:
    """The calls of one native run, shared by its worker threads: the planned ones no worker has
    taken yet, the rows of those made (each also appended to invocations.csv and said as it
    completes), the workers' start errors, and the stop flag that Ctrl-C sets."""

    def __init__(
        self,
        entry: FunctionEntry,
        options: NativeOptions,
        params: dict,
        timeout_s: float,
        log: InvocationLog,
        clock: ClockAnchor,
        say: Callable[[str], None],
    ):
        self.entry = entry
        self.repeat = options.repeat
        self.warmup = options.warmup
        self.params = params
        self.timeout_s = timeout_s
        self.log = log
        self.clock = clock
        self.say = say
        self.rows: list[dict] = []
        self.start_errors: list[str] = []
        self.stop = threading.Event()
        self._rows_lock = threading.Lock()
        self._todo: queue.Queue[int] = queue.Queue()
        for seq in range(options.repeat):
            self._todo.put(seq)

    def next_seq(self) -> int | None:
        """The next planned call no worker has taken, or None when none is left."""
        try:
            return self._todo.get_nowait()
        except queue.Empty:
            return None

    def record(
        self, seq: int, worker_index: int, sent_ns, done_ns, outcome: str, answer: dict | None, error: str = ""
    ) -> None:
        row = _native_row(seq, worker_index, sent_ns, done_ns, outcome, answer, error)
        with self._rows_lock:
            self.rows.append(row)
        name = self.entry.name
        self.log.append(
            (
                seq,
                name,
                name,
                sent_ns if sent_ns != "" else 0,
                sent_ns,
                done_ns,
                outcome,
                "",
                f"native-w{worker_index}-{seq}",
                error[:300],
            )
        )
        self.say(
            f"[{len(self.rows):>{len(str(self.repeat))}}/{self.repeat}] {name}  worker {worker_index}  "
            + (f"{row['exec_ms']:.2f} ms" if row["exec_ms"] != "" else "-")
            + f"  {outcome}"
            + (f": {error[:80]}" if error else "")
        )

    def record_unsent(self, worker_index: int, reason: str) -> None:
        """A ``not_sent`` row for every planned call no worker took."""
        while (seq := self.next_seq()) is not None:
            self.record(seq, worker_index, "", "", "not_sent", None, reason)


def _serve(worker: Worker, calls: _Calls) -> None:
    """A worker's thread: start and warm the worker, then make calls until none is left, the run
    stops, or the worker cannot be started again."""
    try:
        worker.start()
        for _ in range(calls.warmup):
            worker.call(calls.params, calls.timeout_s)
    except (RunError, NotReadyError, WorkerDied, CallTimeout) as error:
        calls.start_errors.append(str(error))
        return
    while not calls.stop.is_set():
        seq = calls.next_seq()
        if seq is None:
            return
        if _call(worker, calls, seq):
            continue
        if calls.stop.is_set():
            return
        try:
            worker.start()  # like a platform replacing a crashed container: the next call is cold
        except (RunError, NotReadyError) as error:
            calls.start_errors.append(str(error))
            return


def _call(worker: Worker, calls: _Calls, seq: int) -> bool:
    """Make call ``seq`` on ``worker`` and record it whatever happens; False when the worker is gone
    (killed after a timeout, or died)."""
    sent_ns = calls.clock.since_zero_ns()
    try:
        answer = worker.call(calls.params, calls.timeout_s)
    except CallTimeout as error:
        calls.record(seq, worker.index, sent_ns, "", "timeout", None, str(error))
        worker.kill()
        return False
    except WorkerDied as error:
        calls.record(
            seq, worker.index, sent_ns, calls.clock.since_zero_ns(), "failed", None, f"{error}: {worker.stderr_tail()}"
        )
        worker.stop()
        return False
    done_ns = calls.clock.since_zero_ns()
    calls.record(
        seq,
        worker.index,
        sent_ns,
        done_ns,
        "ok" if answer.get("ok") else "app_error",
        answer,
        answer.get("error") or "",
    )
    return True


def _drive(workers: list[Worker], calls: _Calls) -> RunStatus:
    """Serve the calls with a thread per worker until they are done; returns the run's status,
    ``complete`` or ``interrupted`` (Ctrl-C stops the workers). Every worker is stopped on return."""
    threads = [
        threading.Thread(target=_serve, args=(worker, calls), name=f"native-worker-{worker.index}", daemon=True)
        for worker in workers
    ]
    status = RunStatus.COMPLETE
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
    except KeyboardInterrupt:
        status = RunStatus.INTERRUPTED
        calls.stop.set()
        for worker in workers:
            worker.kill()
        for thread in threads:
            thread.join(timeout=5)
    finally:
        for worker in workers:
            worker.stop()
    return status


def _write_native_csv(run_dir: Path, rows: list[dict]) -> None:
    with open(run_dir / NATIVE_CSV, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=NATIVE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "cold": int(row["cold"])})


def _finish_manifest(
    run_dir: Path,
    options: NativeOptions,
    status: RunStatus,
    rows: list[dict],
    summary: dict,
    workers: list[Worker],
    perf_dir: Path | None,
) -> None:
    """The manifest's final status, counts, summary, workers and perf counts."""
    manifest = read_manifest(run_dir)
    manifest.status = status
    manifest.counts = {
        "planned": options.repeat,
        "sent": sum(1 for row in rows if row["outcome"] != "not_sent"),
        "failed": sum(1 for row in rows if row["outcome"] not in ("ok", "not_sent")),
    }
    native = manifest.native = manifest.native or {}  # new_native_run wrote it; an empty one is filled
    native["summary"] = summary
    native["workers"] = [
        {
            "index": w.index,
            "starts": w.starts,
            "load_ms": round(w.ready.get("load_ns", 0) / 1e6, 3) if w.ready else None,
            "interpreter": w.ready.get("interpreter") if w.ready else None,
        }
        for w in workers
    ]
    if perf_dir is not None:
        files = sorted(perf_dir.glob("worker-*.csv"))
        native["perf"] = {
            "events": list(options.perf_events),
            "scope": "each worker process from start to exit (interpreter start, import, warm-up and all its calls)",
            "files": [str(path.relative_to(run_dir)) for path in files],
            "counts": {path.stem: perf_counts(path.read_text(errors="replace")) for path in files},
        }
    write_manifest(run_dir, manifest)
