"""``execute``: one workload run, from pre-flight to a finished run directory.

Order, and why:

1. Pre-flight, before anything is created: the schedule, the platform (started here when none
   is configured: the embedded localwhisk), ``GET /`` and its limits, the actions (deployed when
   missing), the request bodies (``param_file``/``data_file`` read), the generic URLs reachable,
   the collectors' ``check()``, host metadata. Any failure raises ConfigError (exit 2) or
   NotReadyError (exit 3) and leaves no run directory behind.
2. The run directory and its manifest (status ``running``), then the collectors and the
   ``runtime_script`` start; the run's monotonic zero is taken after they are up (plus a short
   lead), so their start-up does not make the first invocations late.
3. The dispatcher sends the schedule; SIGINT/SIGTERM, an unreachable platform, a dead required
   collector or lateness past the abort threshold stop it, and every planned invocation still
   gets its row.
4. Collectors and scripts stop, ``post_script`` runs, and on the embedded platform the activation
   records are awaited (bounded) and saved to ``activations.jsonl`` before localwhisk stops.
5. The manifest gets its final status, counts, lateness summary and monitors' descriptions.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from faasprof import rundir
from faasprof.errors import ConfigError, FaasprofError, NotReadyError, RunError
from invoker.dispatch import DispatchOptions, Dispatcher, DispatchResult, new_event_loop, realtime_hint, realtime_permitted
from invoker.preflight import check_out_dir
from invoker.sender import ensure_fd_budget
from invoker.shards import ShardedDispatch, choose_processes, peak_rate_per_s
from invoker.storage import start_workload_storage
from invoker.verdict import check_thresholds, evaluate
from localwhisk.embedded import start_embedded
from monitoring.collectors import build_collectors, tool_versions
from monitoring.host import collect_host
from platforms.base import Platform
from platforms.openwhisk.connection import Connection
from platforms.registry import platforms_used
from workload.schedule import build_schedule

try:  # only to name the event loop in the manifest: uvloop is optional
    import uvloop as _uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    _uvloop = None

START_LEAD_NS = 50_000_000  # zero is this far after the collectors are up: the first send is not late
SCRIPT_GRACE_S = 10.0  # how long runtime_script may outlive the test before it is stopped
POST_SCRIPT_TIMEOUT_S = 600.0
LOCALWHISK_STOP_TIMEOUT_S = 10.0
LOCALWHISK_DIR = "localwhisk"  # the embedded platform's data directory inside the run directory


def _say_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- scripts (FaaSProfiler's perf_monitoring hooks) ----------------------------------------------


class ScriptRun:
    """A user script run as an argv list (no shell string), output kept in ``monitors/<name>/``."""

    def __init__(self, name: str, path: Path, args: list[str], run_dir: Path):
        self.name = name
        self.path = Path(path)
        # A .sh that is not executable is run with bash, as FaaSProfiler did.
        prefix = [] if os.access(self.path, os.X_OK) else ["bash"]
        self.argv = [*prefix, str(self.path), *args]
        self.dir = rundir.monitor_dir(run_dir, name)
        self.run_dir = run_dir
        self.proc: subprocess.Popen | None = None
        self.started_wall_ns: int | None = None
        self.returncode: int | None = None
        self.stopped_by_us = False
        self.error: str | None = None

    def start(self) -> None:
        (self.dir / "command.txt").write_text(" ".join(_shell_quote(a) for a in self.argv) + "\n", encoding="utf-8")
        env = dict(os.environ, FAASPROF_RUN_DIR=str(self.run_dir))
        try:
            with open(self.dir / "stdout.log", "wb") as out, open(self.dir / "stderr.log", "wb") as err:
                # Its own session: a Ctrl-C in the terminal reaches faasprof, which stops it in order.
                self.proc = subprocess.Popen(self.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=self.dir, env=env, start_new_session=True)
            self.started_wall_ns = time.time_ns()
        except OSError as error:
            self.error = f"{self.name} {self.path} could not start: {error.strerror or error}"

    def wait(self, timeout_s: float) -> bool:
        if self.proc is None:
            return True
        try:
            self.returncode = self.proc.wait(timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self) -> None:
        """SIGINT to its process group, then SIGTERM, then SIGKILL; safe twice."""
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.returncode = self.proc.returncode
            return
        self.stopped_by_us = True
        for sig, wait_s in ((signal.SIGINT, 5.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            if self.wait(wait_s):
                break
        self.returncode = self.proc.poll()

    def failed(self) -> str | None:
        """One line when the script failed (not when faasprof stopped it), else None."""
        if self.error:
            return self.error
        if self.returncode not in (None, 0) and not self.stopped_by_us:
            return f"{self.name} {self.path} exited with status {self.returncode}; see {self.dir / 'stderr.log'}"
        return None

    def describe(self) -> dict:
        return {
            "path": str(self.path),
            "argv": self.argv,
            "started_wall_ns": self.started_wall_ns,
            "returncode": self.returncode,
            "stopped_by_faasprof": self.stopped_by_us,
            "error": self.failed(),
            "output_dir": str(self.dir.relative_to(self.run_dir)),
        }


def _shell_quote(arg: str) -> str:
    return shlex.quote(arg)


# -- pre-flight -----------------------------------------------------------------------------------


class _Platforms:
    """The platforms of this run, one per endpoint its instances use (``platforms.registry``, in the
    table's order), each asked for the instances it serves, and the embedded localwhisk's handle
    when the run started one for a platform ``reached_by_connection`` (starting it is the invoker's
    job: platforms and localwhisk stay apart)."""

    def __init__(self) -> None:
        self.used: list[Platform] = []
        self.handle = None  # localwhisk handle when embedded
        self.log_dir: Path | None = None
        self.actions: dict[str, str] = {}

    @property
    def embedded(self) -> bool:
        return self.handle is not None

    @property
    def info(self) -> dict:
        """What the first platform's ``check`` learnt (OpenWhisk's ``GET /``: limits, localwhisk)."""
        return self.used[0].info if self.used else {}

    def of(self, instance: Any) -> Platform:
        """The platform that serves ``instance``."""
        for platform in self.used:
            if platform.serves(instance):
                return platform
        raise ConfigError(f"instances.{instance.name}.endpoint: {instance.endpoint!r} names no platform faasprof can reach")

    def describe(self) -> dict:
        """The manifest's ``platform`` block: the first platform's own description; one that hosts
        the functions adds whether the run started it (embedded) and what deploying did."""
        if not self.used:
            return {"kind": "none"}
        platform = self.used[0].describe()
        if not self.used[0].names_functions:
            return platform
        described = {
            "kind": "localwhisk" if self.embedded else platform.pop("kind"),
            "embedded": self.embedded,
            **{key: value for key, value in platform.items() if key not in ("kind", "localwhisk")},
            "actions": self.actions,
        }
        if self.embedded:
            described["localwhisk"] = getattr(self.handle, "settings", None) or self.info.get("localwhisk")
            # Its records and log live in the run directory: a crashed run's records are there.
            described["data_dir"] = LOCALWHISK_DIR
            described["log"] = f"{LOCALWHISK_DIR}/localwhisk.log"
        elif "localwhisk" in platform:
            described["localwhisk"] = platform["localwhisk"]
        return described

    def stop(self) -> None:
        for platform in self.used:
            try:
                platform.close()
            except Exception:
                pass
        if self.handle is not None:
            self.handle.stop(timeout_s=LOCALWHISK_STOP_TIMEOUT_S)


def _start_embedded(local_settings: dict | None, data_dir: Path, say: Callable[[str], None] | None) -> tuple[Any, Path]:
    """Start localwhisk with its data (records, logs) in ``data_dir``, inside the run directory,
    so that its records survive a crash of the invoker and ``analyze`` finds them."""
    settings = dict(local_settings or {})
    settings["data_dir"] = data_dir
    settings.setdefault("log_dir", data_dir)
    if say:
        say("starting the embedded localwhisk (no --apihost, platform block or ~/.wskprops names a platform)")
    try:
        handle = start_embedded(**settings)
    except FaasprofError:
        raise
    except Exception as error:
        raise NotReadyError(f"the embedded localwhisk did not start: {str(error).splitlines()[0] if str(error) else type(error).__name__}") from None
    return handle, Path(settings["log_dir"])


def _peak_per_minute(intended_ns: np.ndarray) -> int:
    if intended_ns.size == 0:
        return 0
    return int(np.bincount(intended_ns // 60_000_000_000).max())


def _limit_warnings(platform: _Platforms, schedule: Any) -> list[str]:
    limits = (platform.info or {}).get("limits") or {}
    warnings = []
    per_minute = limits.get("actions_per_minute")
    peak = _peak_per_minute(schedule.intended_ns)
    if isinstance(per_minute, (int, float)) and peak > per_minute:
        warnings.append(
            f"the platform allows {per_minute} invocations per minute and this schedule sends up to {peak} in one minute: "
            "expect throttled (429) rows; raise the platform's limit (localwhisk: faasprof local start --help; OpenWhisk: limit_invocations_per_minute)"
        )
    return warnings


def _build_collectors(workload: Any, platform: _Platforms, say: Callable[[str], None] | None) -> tuple[list, list[str]]:
    block = {key: value for key, value in (workload.monitoring or {}).items() if value not in (None, False)}
    if not block:
        return [], []
    cgroup_parents = ((platform.info or {}).get("localwhisk") or {}).get("cgroup_parents") or {}
    collectors = build_collectors(block, {"cgroup_parents": cgroup_parents, "duration_s": workload.duration_s, "host_root": "/"})
    warnings, usable = [], []
    for collector in collectors:
        reason = collector.check()
        if reason is None:
            usable.append(collector)
            continue
        if collector.required:
            raise NotReadyError(f"{workload.origin}: monitoring.{collector.name}: required but unavailable: {reason}")
        text = f"monitoring.{collector.name}: unavailable, running without it: {reason}"
        warnings.append(text)
        if say:
            say("warning: " + text)
    return usable, warnings


# -- the run --------------------------------------------------------------------------------------


def execute(
    workload: Any,
    out_dir: str | os.PathLike,
    connection: Connection | None = None,
    local_settings: dict | None = None,
    progress: bool = True,
    save_records: bool = False,
    options: DispatchOptions | None = None,
    thresholds: dict[str, float] | None = None,
) -> Path:
    """Run ``workload`` and return its run directory (its manifest's ``status`` says how it ended).

    With ``connection=None`` and instances of a platform ``reached_by_connection`` (OpenWhisk), the
    embedded localwhisk is started with ``local_settings`` (``start_embedded`` keyword arguments),
    used and stopped. Raises ConfigError/NotReadyError before anything is created when pre-flight
    fails. ``thresholds`` (``invoker.verdict``) override the workload's ``thresholds`` block; the
    manifest's ``verdict`` says whether the run met them. ``save_records``: wait for the platform's
    records of the run and save them even when the platform outlives the run (an analysis follows:
    ``faasprof run --analyze``); the embedded platform's records are always saved before it stops.
    """
    unresolved = workload.needs_capacity()
    if unresolved:
        first = unresolved[0]
        raise ConfigError(f"{workload.origin}: instances.{first.name}.rate: a fraction of {first.function}'s capacity, not resolved; run it with faasprof run (which reads or measures the capacity) or Workload.with_capacities")
    say = _say_to_stderr if progress else None
    options = options or DispatchOptions()
    thresholds = {**check_thresholds((workload.raw or {}).get("thresholds"), str(workload.origin)), **(thresholds or {})}
    check_out_dir(out_dir)
    schedule = build_schedule(workload)
    if len(schedule) == 0:
        raise ConfigError(f"{workload.origin}: instances: the plan has no invocation (every instance is muted, rate 0, or its activity window is empty); "
                          "give an instance a rate > 0 and a window inside test_duration_in_seconds")
    platform = _Platforms()
    # Signal handlers can only be set from the main thread (a caller may run us in another one).
    main_thread = threading.current_thread() is threading.main_thread()
    previous_term = signal.getsignal(signal.SIGTERM)
    if main_thread:
        signal.signal(signal.SIGTERM, _term_as_interrupt)
    run_dir: Path | None = None
    running = False
    storage = None
    try:
        # A `storage` block: its servers on loopback, their endpoints in every instance's params.
        storage, workload = start_workload_storage(workload, say)
        for cls in platforms_used(workload.instances):
            if cls.reached_by_connection:
                if connection is None:
                    # The embedded platform keeps its data in the run directory, so the directory
                    # exists from here on; a failed pre-flight removes it again.
                    run_dir = _create_run_dir(out_dir, workload.test_name)
                    platform.handle, platform.log_dir = _start_embedded(local_settings, run_dir / LOCALWHISK_DIR, say)
                    connection = Connection(apihost=platform.handle.apihost, auth=platform.handle.auth, namespace=platform.handle.namespace, source="embedded")
                if connection.insecure:
                    options.insecure = True
            used = cls.for_workload(workload, connection)
            platform.used.append(used)  # closed by platform.stop() whatever happens next
            used.check(workload.instances)
            # Every function the workload invokes exists: on OpenWhisk its own functions and missing
            # catalogue functions are deployed; any other missing action is refused with the deploy commands.
            platform.actions.update(used.ensure_deployed(workload))
        requests = [platform.of(instance).prepare_request(instance, workload.origin) for instance in workload.instances]
        ensure_fd_budget(options.max_connections, origins=len({request.origin for request in requests}))
        collectors, warnings = _build_collectors(workload, platform, say)
        for text in _limit_warnings(platform, schedule):
            warnings.append(text)
            if say:
                say("warning: " + text)
        host, tools = collect_host("/"), tool_versions()
        if run_dir is None:
            run_dir = _create_run_dir(out_dir, workload.test_name)
        running = True
        return _run(workload, schedule, run_dir, platform, requests, collectors, warnings, host, tools, options, say, save_records, thresholds)
    finally:
        platform.stop()
        if storage is not None:
            storage.stop()
        if run_dir is not None and not running:
            shutil.rmtree(run_dir, ignore_errors=True)
        if main_thread:
            signal.signal(signal.SIGTERM, previous_term)


def _create_run_dir(out_dir, test_name: str) -> Path:
    try:
        return rundir.create_run_dir(out_dir, test_name)
    except OSError as error:
        raise ConfigError(f"--out {out_dir}: cannot create the run directory ({error.strerror or error}); pass --out DIR with a writable directory") from None


def _term_as_interrupt(signum, frame):  # outside the send loop, SIGTERM unwinds like Ctrl-C
    raise KeyboardInterrupt


def _run(workload, schedule, run_dir: Path, platform: _Platforms, requests, collectors, warnings, host, tools, options, say, save_records, thresholds) -> Path:
    planned = len(schedule)
    choice = choose_processes(options.send_processes, peak_rate_per_s(schedule.intended_ns))
    options.send_processes = choice.processes
    provisional = rundir.ClockAnchor()
    manifest = rundir.new_manifest(
        workload.test_name,
        workload.resolved(),
        provisional,
        platform=platform.describe(),
        host=host,
        tools=tools,
        invoker={**options.describe(), "send_processes_choice": choice.describe(), "event_loop": _loop_name()},
        monitors=[],
        scripts={},
        warnings=list(warnings),
    )
    manifest.counts["planned"] = planned
    try:
        rundir.write_manifest(run_dir, manifest)
        # The plan on disk before the first send: a reader of a torn run compares it with the
        # send journal and the rows, never taking the rows present for the plan.
        rundir.write_plan(run_dir, np.ascontiguousarray(schedule.intended_ns, dtype=np.int64), np.ascontiguousarray(schedule.instance_idx, dtype=np.int32),
                          [i.name for i in workload.instances], [i.function for i in workload.instances])
        log = rundir.InvocationLog(run_dir)
    except OSError as error:
        raise RunError(f"{run_dir}: cannot write the run directory ({error.strerror or error}); free space there or pass --out on another file system") from None
    if say and choice.worth_saying:
        say(f"send processes: {choice.processes} ({choice.why})")
    hint = realtime_hint(choice.busiest_second, options.realtime_priority, realtime_permitted())
    if say and hint:
        say(hint)
    scripts: dict[str, ScriptRun] = {}
    started: list = []
    result: DispatchResult | None = None
    dispatcher: Dispatcher | None = None
    sharded: ShardedDispatch | None = None
    failure: BaseException | None = None
    status, reason = "interrupted", "faasprof stopped before the test started"
    try:
        for collector in collectors:
            collector.start(run_dir)
            started.append(collector)
        if workload.runtime_script is not None:
            duration_arg = str(int(workload.duration_s)) if float(workload.duration_s).is_integer() else repr(float(workload.duration_s))
            script = ScriptRun("runtime_script", workload.runtime_script, [duration_arg], run_dir)
            scripts["runtime_script"] = script
            script.start()
            if script.error and say:
                say("warning: " + script.error)
        checks = [_log_check(log), _collector_check(started, warnings, say), _platform_check(platform)]
        if options.send_processes > 1:
            # The send processes start (and read their shares) before the zero is taken.
            sharded = ShardedDispatch(run_dir, schedule.intended_ns, schedule.instance_idx, [(i.name, i.function) for i in workload.instances],
                                      requests, log, options, checks=checks, say=say, duration_s=workload.duration_s)
            sharded.start()
        zero_ns = time.monotonic_ns() + START_LEAD_NS
        clock = rundir.ClockAnchor(zero_ns, time.time_ns() + START_LEAD_NS)
        manifest.clock = clock.to_json()
        manifest.monitors = rundir.monitors_by_name([c.describe() for c in started])
        rundir.write_manifest(run_dir, manifest)
        if say:
            say(f"run directory {run_dir}; {planned:,} invocations over {workload.duration_s:g} s"
                + (f" from {sharded.processes} send processes" if sharded is not None else ""))
        if sharded is not None:
            result = sharded.run(zero_ns)
            manifest.invoker.update(sharded.describe())
        else:
            dispatcher = Dispatcher(
                schedule.intended_ns,
                schedule.instance_idx,
                [(i.name, i.function) for i in workload.instances],
                requests,
                log.append,
                options,
                checks=checks,
                say=say,
                duration_s=workload.duration_s,
                journal=log.sent,
            )
            result = _dispatch(dispatcher, zero_ns)
        status, reason = result.status, result.reason
    except KeyboardInterrupt:
        status, reason = "interrupted", "interrupted (Ctrl-C or SIGTERM) before the test started"
    except Exception as error:  # a bug or an OS failure: still leave a complete, readable run
        failure = error
        status, reason = "interrupted", f"faasprof failed: {type(error).__name__}: {error}"
    finally:
        if result is None and dispatcher is not None:
            dispatcher.stop_status, dispatcher.stop_reason = status, reason
            dispatcher._fill_not_sent()
        if result is None and sharded is not None:
            sharded.close_after_failure(reason)
        log.close()
        if result is None and dispatcher is None and sharded is None and log.error is None:
            try:
                _complete_rows_after_failure(run_dir, schedule, workload, reason)
            except OSError as error:
                log.error = f"{run_dir}: cannot write the run's files ({error.strerror or error}); free space on that file system or pass --out on another one"
        if log.error is not None:
            # A failed write stops the run; a reader reconstructs the rows that could not be written.
            if reason != log.error and status != "complete":
                warnings.append(f"before the write failed, the run had stopped ({status}: {reason})")
            status, reason = "aborted", log.error
            if log.lost:
                warnings.append(f"{log.lost:,} rows could not be written; readers reconstruct them from the plan and the send journal (unanswered/unrecorded)")
        for collector in started:
            collector.stop()
        runtime = scripts.get("runtime_script")
        if runtime is not None and not runtime.wait(SCRIPT_GRACE_S if status == "complete" else 0.5):
            runtime.stop()
    if say and result is not None:
        lat = result.lateness_ms
        say(
            f"{status}: sent {result.sent:,}/{planned:,} in {result.send_wall_s:.1f} s; outcomes "
            + ", ".join(f"{k} {v:,}" for k, v in result.outcomes.items())
            + f"; lateness p50 {lat['p50']} p99 {lat['p99']} max {lat['max']} ms; invoker cpu {result.cpu_percent:.0f}%"
        )
    doing = "running post_script"
    try:
        if workload.post_script is not None:
            post = ScriptRun("post_script", workload.post_script, [str(run_dir)], run_dir)
            scripts["post_script"] = post
            post.start()
            if not post.wait(POST_SCRIPT_TIMEOUT_S):
                post.stop()
                post.error = f"post_script {post.path} still running after {POST_SCRIPT_TIMEOUT_S:g} s; stopped"
        # The records are saved when the platform goes away with us (embedded) and before an
        # analysis (--analyze), waiting for activations still running.
        if (platform.embedded or save_records) and result is not None and log.error is None:
            doing = "waiting for activation records"
            _save_activations(platform, run_dir, manifest, warnings, say)
    except KeyboardInterrupt:
        # The records fetched so far are saved (see _save_activations); the run keeps the status
        # and reason it already had, and says what was cut short.
        if status == "complete":
            status, reason = "interrupted", f"interrupted while {doing} (every invocation had been sent and answered)"
        else:
            warnings.append(f"interrupted again while {doing}")
        for script in scripts.values():
            script.stop()
    except FaasprofError as error:  # the platform failed while its records were read
        warnings.append(f"activation records not saved: {error}")
        if say:
            say(f"warning: activation records not saved: {error}")
    except OSError as error:  # the disk filled up while they were written
        warnings.append(f"activation records not saved: {error.strerror or error}")
        if say:
            say(f"warning: activation records not saved: {error.strerror or error}")
    for script in scripts.values():
        script_failure = script.failed()
        if script_failure:
            warnings.append(script_failure)
            if say:
                say("warning: " + script_failure)
    if platform.embedded:
        platform.stop()
    if log.error is None:
        try:
            records = rundir.read_record_ids(rundir.activations_path(run_dir))
            manifest.verdict = evaluate(rundir.read_invocations(run_dir), thresholds, records=records)
        except (OSError, FaasprofError) as error:
            warnings.append(f"the run's thresholds could not be checked ({error})")
        else:
            if say and not manifest.verdict["passed"]:
                say("run " + manifest.verdict["message"])
    try:
        _finish_manifest(run_dir, manifest, status, reason, result, started, scripts, warnings, planned)
    except OSError as error:
        # The disk is full: the manifest keeps status running, which every reader takes for a
        # torn run (plan vs send journal vs rows).
        raise RunError(f"{run_dir}: the run stopped: {reason}; the manifest could not be updated either ({error.strerror or error})") from None
    if failure is not None:
        raise RunError(f"{run_dir}: the run stopped: {reason}") from failure
    return run_dir


def _loop_name() -> str:
    return "uvloop" if _uvloop is not None else "asyncio"


def _collector_check(collectors: list, warnings: list[str], say) -> Callable[[], tuple[str, str] | None]:
    reported: set[str] = set()

    def check() -> tuple[str, str] | None:
        for collector in collectors:
            if collector.name in reported or collector.alive():
                continue
            reported.add(collector.name)
            if collector.required:
                return "interrupted", f"required collector {collector.name} stopped during the run; see monitors/{collector.name}/stderr.log"
            text = f"collector {collector.name} stopped during the run (optional, the run goes on); see monitors/{collector.name}/stderr.log"
            warnings.append(text)
            if say:
                say("warning: " + text)
        return None

    return check


def _log_check(log: rundir.InvocationLog) -> Callable[[], tuple[str, str] | None]:
    """The first failed write (a full disk) stops the run: sending on would only lose more rows."""

    def check() -> tuple[str, str] | None:
        return ("aborted", log.error) if log.error is not None else None

    return check


def _platform_check(platform: _Platforms) -> Callable[[], tuple[str, str] | None]:
    def check() -> tuple[str, str] | None:
        handle = platform.handle
        if handle is not None and hasattr(handle, "alive") and not handle.alive():
            log = getattr(handle, "log_path", None)
            return "interrupted", f"the embedded localwhisk exited during the run (see {log})"
        return None

    return check


def _dispatch(dispatcher: Dispatcher, zero_ns: int) -> DispatchResult:
    """Run the dispatcher on a fresh event loop with SIGINT/SIGTERM stopping it in order."""
    loop = new_event_loop()
    installed = []
    previous_int = signal.getsignal(signal.SIGINT)
    try:
        for sig, label in ((signal.SIGINT, "Ctrl-C (SIGINT)"), (signal.SIGTERM, "SIGTERM")):
            try:
                loop.add_signal_handler(sig, dispatcher.request_stop, "interrupted", f"{label} received")
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
            signal.signal(signal.SIGTERM, _term_as_interrupt)


def _complete_rows_after_failure(run_dir: Path, schedule, workload, reason: str) -> None:
    """The send loop never ran: still one row per planned invocation, all ``not_sent``."""
    names = [i.name for i in workload.instances]
    functions = [i.function for i in workload.instances]
    rundir.append_rows(run_dir, ((seq, names[idx], functions[idx], intended, None, None, "not_sent", None, None, reason)
                                 for seq, (intended, idx) in enumerate(zip(schedule.intended_ns.tolist(), schedule.instance_idx.tolist()))))


def _finish_manifest(run_dir, manifest, status, reason, result, collectors, scripts, warnings, planned) -> None:
    manifest.status = status
    manifest.status_reason = reason
    manifest.finished_utc = _utc_now()
    outcomes = result.outcomes if result is not None else {"not_sent": planned}
    manifest.counts = {
        "planned": planned,
        "sent": result.sent if result is not None else 0,
        "failed": sum(v for k, v in outcomes.items() if k not in ("ok", "not_sent")),
        "not_sent": outcomes.get("not_sent", 0),
        "outcomes": outcomes,
    }
    if result is not None:
        manifest.invoker.update(result.describe())
        warnings.extend(w for w in result.warnings if w not in warnings)
        manifest.invoker.pop("warnings", None)  # kept once, in the top-level list
    manifest.monitors = rundir.monitors_by_name([c.describe() for c in collectors])
    manifest.scripts = {name: script.describe() for name, script in scripts.items()}
    manifest.warnings = warnings
    rundir.write_manifest(run_dir, manifest)


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# -- activation records (embedded platform) -------------------------------------------------------


def _save_activations(platform: _Platforms, run_dir: Path, manifest: rundir.Manifest, warnings: list[str], say) -> None:
    """Wait until the platform stored every activation of the run (deadline from the actions' time
    limits) and save them all; on Ctrl-C what was fetched is saved and the interrupt goes on."""
    keeper = next((used for used in platform.used if used.keeps_records), None)
    if keeper is None:
        return  # a generic endpoint keeps no records faasprof can read
    report: dict = {}
    manifest.activations = report
    try:
        keeper.fetch_records(run_dir, say=say, report=report)
    finally:
        if report.get("missing"):
            text = f"{report['missing']:,} of {report['expected']:,} activation records missing: {report['missing_why']}"
            warnings.append(text)
            if say:
                say("warning: " + text)


__all__ = ["execute", "ScriptRun"]
