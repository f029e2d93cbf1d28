"""``execute``: one workload run, from pre-flight to a finished run directory; ``Run`` holds its
steps, one method each, and the state they hand on.

Order, and why:

1. Pre-flight, before anything is created: the remote hosts of ``monitoring.hosts`` reached (one
   that cannot be is said before anything starts), the schedule, the platform (started here when none
   is configured: the embedded localwhisk), ``GET /`` and its limits, the actions (deployed when
   missing), the request bodies (``param_file``/``data_file`` read), the generic URLs reachable,
   the collectors' ``check()``, host metadata. Any failure raises ConfigError (exit 2) or
   NotReadyError (exit 3) and leaves no run directory behind.
2. The run directory and its manifest (status ``running``), then the collectors and the
   ``runtime_script`` start; the run's monotonic zero is taken after they are up (plus a short
   lead), so their start-up does not make the first invocations late.
3. The dispatcher sends the schedule; SIGINT/SIGTERM, a platform where nothing ever listened, a
   dead required collector or lateness past the abort threshold stop it, and every planned
   invocation still gets its row. A platform that refuses, stalls or sheds calls later is
   measured to the planned end, and the run says how it pushed back ("over-invoked: ...").
4. Collectors, remote hosts and scripts stop, ``post_script`` runs; the embedded platform stops only once the
   activations it accepted ended (``invoker.drain``), then its store gives the records
   (``localwhisk.run_records``); with ``--analyze`` another platform is asked for them instead.
5. The manifest gets its final status, counts, lateness summary and monitors' descriptions.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import time
from pathlib import Path

import numpy as np

from faasprof import rundir
from faasprof.errors import ConfigError, FaasprofError, RunError
from faasprof.invoker.dispatch import (
    Dispatcher,
    DispatchOptions,
    DispatchResult,
    realtime_hint,
    realtime_permitted,
)
from faasprof.invoker.drain import ABANDONED, STALLED, drain_embedded
from faasprof.invoker.platform_set import LOCALWHISK_DIR, PlatformSet, limit_warnings, start_embedded_platform
from faasprof.invoker.preflight import check_out_dir
from faasprof.invoker.run_collectors import collector_check, connect_hosts, usable_collectors
from faasprof.invoker.run_steps import (
    Monitors,
    Preflight,
    Prepared,
    Sending,
    complete_rows_after_failure,
    create_run_dir,
    hosts_check,
    log_check,
)
from faasprof.invoker.scripts import ScriptRun
from faasprof.invoker.selfcheck import SelfCheck, replays_trace, self_check_limits
from faasprof.invoker.send_loop import loop_name, send, sigterm_as_interrupt
from faasprof.invoker.sender import ensure_fd_budget
from faasprof.invoker.shards import ShardedDispatch, choose_processes, peak_rate_per_s
from faasprof.invoker.storage import start_workload_storage
from faasprof.invoker.verdict import check_thresholds, evaluate
from faasprof.localwhisk.run_records import StoreReadError, save_store_records, store_path
from faasprof.monitoring.collectors import tool_versions
from faasprof.monitoring.host import collect_host
from faasprof.monitoring.noise import HostNoise, NoiseSampler, noise_line
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, pushback_line
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.registry import platforms_used
from faasprof.progress import QUIET, Progress
from faasprof.rundir import RunStatus
from faasprof.workload.schedule import build_schedule, empty_plan_problem
from faasprof.workload.spec import Workload

START_LEAD_NS = 50_000_000  # zero is this far after the collectors are up: the first send is not late
SCRIPT_GRACE_S = 10.0  # how long runtime_script may outlive the test before it is stopped
POST_SCRIPT_TIMEOUT_S = 600.0


def execute(
    workload: Workload,
    out_dir: str | os.PathLike,
    connection: Connection | None = None,
    local_settings: dict | None = None,
    progress: Progress = QUIET,
    save_records: bool = False,
    options: DispatchOptions | None = None,
    thresholds: dict[str, float] | None = None,
) -> Path:
    """Run ``workload`` and return its run directory (its manifest's ``status`` says how it ended).

    With ``connection=None`` and instances of a platform ``reached_by_connection`` (OpenWhisk), the
    embedded localwhisk is started with ``local_settings`` (``start_embedded`` keyword arguments),
    used and stopped. Raises ConfigError/NotReadyError before anything is created when pre-flight
    fails. ``thresholds`` (``faasprof.invoker.verdict``) override the workload's ``thresholds`` block; the
    manifest's ``verdict`` says whether the run met them. ``save_records``: wait for the platform's
    records of the run and save them even when the platform outlives the run (an analysis follows:
    ``faasprof run --analyze``); the embedded platform's records are always saved before it stops.
    Progress and warnings go to ``progress`` (the command layer's; by default nowhere).
    """
    unresolved = workload.needs_capacity()
    if unresolved:
        first = unresolved[0]
        raise ConfigError(
            f"{workload.origin}: instances.{first.name}.rate: a fraction of {first.function}'s capacity, not resolved; run it with faasprof run (which reads or measures the capacity) or Workload.with_capacities"
        )
    options = options or DispatchOptions()
    thresholds = {
        **check_thresholds((workload.raw or {}).get("thresholds"), str(workload.origin)),
        **(thresholds or {}),
    }
    check_out_dir(out_dir)
    run = Run(workload, options, progress, save_records, thresholds)
    with sigterm_as_interrupt():
        try:
            return run.run(run.preflight(out_dir, connection, local_settings))
        finally:
            run.release()


class Run:
    """One run of a workload, step by step (the module's docstring says why in this order), each
    step given what the one before returned: ``preflight`` → ``Preflight``; then ``run``:
    ``prepare`` → ``Prepared``, ``start_monitors`` fills ``Monitors``, ``dispatch`` →
    ``DispatchResult``, ``complete_rows`` and ``stop_monitors`` whatever happened, ``after_test``
    (post_script, records) and ``finish`` (verdict, manifest); ``release`` in the end.

    Until the send loop has run, ``status``/``reason`` say why it did not; ``warnings`` gathers
    what the manifest keeps (each also said on ``progress``)."""

    def __init__(
        self,
        workload: Workload,
        options: DispatchOptions,
        progress: Progress,
        save_records: bool,
        thresholds: dict[str, float],
    ):
        self.workload = workload
        self.options = options
        self.progress = progress
        self.save_records = save_records
        self.thresholds = thresholds
        self.schedule = build_schedule(workload)
        if len(self.schedule) == 0:
            raise ConfigError(
                empty_plan_problem(workload) or f"{workload.origin}: instances: the plan has no invocation"
            )
        self.planned = len(self.schedule)
        self.platform = PlatformSet()
        # What pre-flight started besides the platforms (storage, remote hosts, the run directory
        # while no run uses it), released in ``release`` whatever happened.
        self.resources = contextlib.ExitStack()
        self.running = False  # the run directory is the run's: pre-flight no longer removes it
        self.warnings: list[str] = []
        self.status: RunStatus = RunStatus.INTERRUPTED
        # The check of issued against intended, made when the dispatch starts, read by finish.
        self.self_check: SelfCheck | None = None
        self.noise = NoiseSampler()  # what other work took while the run went (host_noise)
        self.host_noise: HostNoise | None = None
        self.reason: str | None = "faasprof stopped before the test started"

    def warn(self, text: str) -> None:
        """A warning the manifest keeps, said as it happens."""
        self.warnings.append(text)
        self.progress.warn(text)

    # -- 1. pre-flight ----------------------------------------------------------------------------

    def preflight(
        self, out_dir: str | os.PathLike, connection: Connection | None, local_settings: dict | None
    ) -> Preflight:
        """Everything checked before the run directory is used; it exists from here only when the
        embedded platform keeps its data there (``release`` removes it again on a failure)."""
        platform, progress = self.platform, self.progress
        # The remote hosts first: one that cannot be reached is said before anything starts.
        hosts = connect_hosts(self.workload, progress)
        if hosts is not None:
            self.resources.callback(hosts.close)
        # A `storage` block: its servers on loopback, their endpoints in every instance's params.
        storage, workload = start_workload_storage(self.workload, progress.say)
        if storage is not None:
            self.resources.callback(storage.stop)
        self.workload = workload
        run_dir: Path | None = None
        for cls in platforms_used(workload.instances):
            if cls.reached_by_connection:
                if connection is None:
                    # The embedded platform keeps its data in the run directory, so the directory
                    # exists from here on; a failed pre-flight removes it again.
                    run_dir = self._run_dir(out_dir)
                    connection = self._start_embedded(local_settings, run_dir)
                if connection.insecure:
                    self.options.insecure = True
            used = cls.for_workload(workload, connection)
            platform.used.append(used)  # closed by release() whatever happens next
            used.check(workload.instances)
            # Every function the workload invokes exists: on OpenWhisk its own functions and missing
            # catalogue functions are deployed; any other missing action is refused with the deploy commands.
            platform.actions.update(used.ensure_deployed(workload))
        requests = [platform.of(instance).prepare_request(instance, workload.origin) for instance in workload.instances]
        ensure_fd_budget(self.options.max_connections, origins=len({request.origin for request in requests}))
        collectors, self.warnings = usable_collectors(workload, platform, progress)
        for text in limit_warnings(platform, self.schedule):
            self.warn(text)
        host, tools = collect_host("/"), tool_versions()
        return Preflight(
            workload=workload,
            run_dir=run_dir if run_dir is not None else self._run_dir(out_dir),
            requests=requests,
            collectors=collectors,
            hosts=hosts,
            host=host,
            tools=tools,
        )

    def _run_dir(self, out_dir: str | os.PathLike) -> Path:
        """The run directory, removed again by ``release`` unless a run used it."""
        run_dir = create_run_dir(out_dir, self.workload.test_name)
        self.resources.callback(self._remove_unused, run_dir)
        return run_dir

    def _remove_unused(self, run_dir: Path) -> None:
        if not self.running:
            shutil.rmtree(run_dir, ignore_errors=True)

    def _start_embedded(self, local_settings: dict | None, run_dir: Path) -> Connection:
        """The embedded localwhisk started with its data in the run directory; how to reach it."""
        handle, self.platform.log_dir = start_embedded_platform(local_settings, run_dir / LOCALWHISK_DIR, self.progress)
        self.platform.handle = handle
        return Connection(apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded")

    def release(self) -> None:
        """The platforms and the storage stop; a run directory pre-flight made but no run used goes."""
        self.platform.stop()
        self.resources.close()

    # -- 2. to 5. the run -------------------------------------------------------------------------

    def run(self, found: Preflight) -> Path:
        """The run on the directory pre-flight made; every planned invocation gets its row."""
        self.running = True
        try:
            prepared = self.prepare(found)
        except KeyboardInterrupt:
            # Nothing was sent nor measured: the directory goes as after a failed pre-flight
            # (``release``) rather than stay a torn run of nothing.
            self.running = False
            raise
        monitors = Monitors()
        senders: list[Sending] = []  # the one that started, for complete_rows after a failure
        result: DispatchResult | None = None
        failure: BaseException | None = None
        try:
            self.start_monitors(found, monitors)
            result = self.dispatch(found, prepared, monitors, senders)
        except KeyboardInterrupt:
            self.status, self.reason = RunStatus.INTERRUPTED, "interrupted (Ctrl-C or SIGTERM) before the test started"
        except Exception as error:  # a bug or an OS failure: still leave a complete, readable run
            failure = error
            self.status, self.reason = RunStatus.INTERRUPTED, f"faasprof failed: {type(error).__name__}: {error}"
        finally:
            self.complete_rows(found, prepared.log, senders, result)
            self.stop_monitors(found, monitors)
        self._say_outcome(result)
        self.after_test(found, prepared, monitors, result)
        path = self.finish(found, prepared, monitors, result)
        if failure is not None:
            raise RunError(f"{found.run_dir}: the run stopped: {self.reason}") from failure
        return path

    def prepare(self, found: Preflight) -> Prepared:
        """The send processes chosen, the manifest (status ``running``), the plan and the log."""
        workload, options, schedule, run_dir = found.workload, self.options, self.schedule, found.run_dir
        choice = choose_processes(options.send_processes, peak_rate_per_s(schedule.intended_ns))
        options.send_processes = choice.processes
        manifest = rundir.new_manifest(
            workload.test_name,
            workload.resolved(),
            rundir.ClockAnchor(),  # provisional: the zero is taken when the collectors are up
            platform=self.platform.describe(),
            host=found.host,
            tools=found.tools,
            invoker={**options.describe(), "send_processes_choice": choice.describe(), "event_loop": loop_name()},
            monitors=[],
            scripts={},
            warnings=list(self.warnings),
        )
        manifest.counts["planned"] = self.planned
        try:
            rundir.write_manifest(run_dir, manifest)
            # The plan on disk before the first send: a reader of a torn run compares it with the
            # send journal and the rows, never taking the rows present for the plan.
            rundir.write_plan(
                run_dir,
                np.ascontiguousarray(schedule.intended_ns, dtype=np.int64),
                np.ascontiguousarray(schedule.instance_idx, dtype=np.int32),
                [i.name for i in workload.instances],
                [i.function for i in workload.instances],
            )
            log = rundir.InvocationLog(run_dir)
        except OSError as error:
            raise RunError(
                f"{run_dir}: cannot write the run directory ({error.strerror or error}); free space there or pass --out on another file system"
            ) from None
        if choice.worth_saying:
            self.progress.say(f"send processes: {choice.processes} ({choice.why})")
        hint = realtime_hint(choice.busiest_second, options.realtime_priority, realtime_permitted())
        if hint:
            self.progress.say(hint)
        return Prepared(manifest=manifest, log=log, send_processes=choice.processes)

    # -- monitors: collectors and scripts ---------------------------------------------------------

    def start_monitors(self, found: Preflight, monitors: Monitors) -> None:
        """The collectors, in order, then the ``runtime_script`` (given the test's duration)."""
        self.noise.start()
        for collector in found.collectors:
            collector.start(found.run_dir)
            monitors.collectors.append(collector)
        if found.hosts is not None:
            found.hosts.start(found.run_dir)
        workload = found.workload
        if workload.runtime_script is not None:
            duration_arg = (
                str(int(workload.duration_s))
                if float(workload.duration_s).is_integer()
                else repr(float(workload.duration_s))
            )
            script = ScriptRun("runtime_script", workload.runtime_script, [duration_arg], found.run_dir)
            monitors.scripts["runtime_script"] = script
            script.start()
            if script.error:
                self.progress.warn(script.error)

    def stop_monitors(self, found: Preflight, monitors: Monitors) -> None:
        """The collectors stop; the ``runtime_script`` gets a grace after a complete run."""
        self.noise.stop()
        self.host_noise = self.noise.summary()
        for collector in monitors.collectors:
            collector.stop()
        if found.hosts is not None:
            found.hosts.check(self.warn)  # a host lost since the dispatcher's last check is said too
            found.hosts.stop()
        runtime = monitors.scripts.get("runtime_script")
        if runtime is not None and not runtime.wait(SCRIPT_GRACE_S if self.status == RunStatus.COMPLETE else 0.5):
            runtime.stop()

    def _check_platform(self) -> tuple[RunStatus, str] | None:
        handle = self.platform.handle
        if handle is not None and not handle.alive():
            return (
                RunStatus.INTERRUPTED,
                f"the embedded localwhisk exited during the run (see {handle.log_path})",
            )
        return None

    # -- dispatch: the send loop ------------------------------------------------------------------

    def dispatch(
        self, found: Preflight, prepared: Prepared, monitors: Monitors, senders: list[Sending]
    ) -> DispatchResult:
        """The zero taken once the collectors are up, then the schedule sent by one dispatcher or
        by the send processes (which start, and read their shares, before the zero); the sender
        that started is added to ``senders``."""
        workload, schedule, options = found.workload, self.schedule, self.options
        manifest, log = prepared.manifest, prepared.log
        hosts = found.hosts
        checks = [
            log_check(log),
            collector_check(monitors.collectors, self.warn),
            self._check_platform,
            hosts_check(hosts, self.warn),
        ]
        self_check = SelfCheck(
            self_check_limits(workload.raw.get("self_check"), replays_trace(workload), options.self_check),
            schedule.intended_ns,
        )
        self.self_check = self_check
        checks.append(self_check.check)
        instances = [(i.name, i.function) for i in workload.instances]
        sharded: ShardedDispatch | None = None
        if prepared.send_processes > 1:
            sharded = ShardedDispatch(
                found.run_dir,
                schedule.intended_ns,
                schedule.instance_idx,
                instances,
                found.requests,
                log,
                options,
                checks=checks,
                progress=self.progress,
                duration_s=workload.duration_s,
            )
            senders.append(sharded)
            sharded.start()
        zero_ns = time.monotonic_ns() + START_LEAD_NS
        clock = rundir.ClockAnchor(zero_ns, time.time_ns() + START_LEAD_NS)
        manifest.clock = clock.to_json()
        manifest.monitors = rundir.monitors_by_name([c.describe() for c in monitors.collectors])
        if hosts is not None:
            hosts.set_zero(zero_ns)
            manifest.update(hosts=hosts.manifest_entry())
        rundir.write_manifest(found.run_dir, manifest)
        self.progress.say(
            f"run directory {found.run_dir}; {self.planned:,} invocations over {workload.duration_s:g} s"
            + (f" from {sharded.processes} send processes" if sharded is not None else "")
        )
        if sharded is not None:
            self_check.watch(sharded, zero_ns)
            result = sharded.run(zero_ns)
            manifest.invoker.update(sharded.describe())
        else:
            dispatcher = Dispatcher(
                schedule.intended_ns,
                schedule.instance_idx,
                instances,
                found.requests,
                log.append,
                options,
                checks=checks,
                progress=self.progress,
                duration_s=workload.duration_s,
                journal=log.sent,
            )
            senders.append(dispatcher)
            self_check.watch(dispatcher, zero_ns)
            result = send(dispatcher, zero_ns)
        self.status, self.reason = result.status, result.reason
        return result

    def _say_outcome(self, result: DispatchResult | None) -> None:
        if result is None:
            return
        lat = result.lateness_ms
        self.progress.say(
            f"{self.status}: sent {result.sent:,}/{self.planned:,} in {result.send_wall_s:.1f} s; outcomes "
            + ", ".join(f"{k} {v:,}" for k, v in result.outcomes.items())
            + f"; lateness p50 {lat['p50']} p99 {lat['p99']} max {lat['max']} ms; invoker cpu {result.cpu_percent:.0f}%"
        )
        # How the platform pushed back is the run's finding (kept among its warnings); where nothing
        # ever listened, the stop's reason says it all.
        pushback = pushback_line(
            result.pushback, self.planned, sum(result.outcomes.get(name, 0) for name in ACCEPTED_HTTP_OUTCOMES)
        )
        if pushback and result.never_reached is None:
            self.warn(pushback)
        if self.host_noise is not None:
            self.progress.say(noise_line(self.host_noise.to_json()))
            if self.host_noise.warning:
                self.warn(self.host_noise.warning)

    # -- finish: rows, records, verdict, manifest -------------------------------------------------

    def complete_rows(
        self, found: Preflight, log: rundir.InvocationLog, senders: list[Sending], result: DispatchResult | None
    ) -> None:
        """Whatever stopped the run, one row per planned invocation, and the log closed; a failed
        write makes the run ``aborted`` (a reader reconstructs the rows that could not be written)."""
        status, reason = self.status, self.reason or ""
        if result is None:
            for sender in senders:
                if isinstance(sender, ShardedDispatch):
                    sender.close_after_failure(reason)
                else:
                    sender.close_after_failure(status, reason)
        log.close()
        if result is None and not senders and log.error is None:
            try:
                complete_rows_after_failure(found.run_dir, self.schedule, found.workload, reason)
            except OSError as error:
                log.error = f"{found.run_dir}: cannot write the run's files ({error.strerror or error}); free space on that file system or pass --out on another one"
        if log.error is None:
            return
        if reason != log.error and status != RunStatus.COMPLETE:
            self.warnings.append(f"before the write failed, the run had stopped ({status}: {reason})")
        self.status, self.reason = RunStatus.ABORTED, log.error
        if log.lost:
            self.warnings.append(
                f"{log.lost:,} rows could not be written; readers reconstruct them from the plan and the send journal (unanswered/unrecorded)"
            )

    def after_test(
        self, found: Preflight, prepared: Prepared, monitors: Monitors, result: DispatchResult | None
    ) -> None:
        """``post_script``, then the embedded platform's accepted activations waited for, or another
        platform's records fetched when an analysis follows (``--analyze``); a Ctrl-C cuts this short."""
        doing = "running post_script"
        try:
            self._run_post_script(found, monitors)
            if self.platform.embedded:
                doing = "waiting for the embedded localwhisk's activations"
                self._drain_platform(found, prepared, monitors)
            elif self.save_records and result is not None and prepared.log.error is None:
                doing = "waiting for activation records"
                self._save_records(found, prepared)
        except KeyboardInterrupt:
            # The records fetched so far are saved (see _save_records); the run keeps the status
            # and reason it already had, and says what was cut short.
            if self.status == RunStatus.COMPLETE:
                self.status, self.reason = (
                    RunStatus.INTERRUPTED,
                    f"interrupted while {doing} (every invocation had been sent and answered)",
                )
            else:
                self.warnings.append(f"interrupted again while {doing}")
            for script in monitors.scripts.values():
                script.stop()
        except FaasprofError as error:  # the platform failed while its records were read
            self.warn(f"activation records not saved: {error}")
        except OSError as error:  # the disk filled up while they were written
            self.warn(f"activation records not saved: {error.strerror or error}")

    def _drain_platform(self, found: Preflight, prepared: Prepared, monitors: Monitors) -> None:
        """The embedded platform's accepted activations waited for; the manifest's ``drain`` says how it ended."""
        keeper = next((used for used in self.platform.used if used.keeps_records), None)
        report = drain_embedded(
            self.platform.handle,
            getattr(keeper, "client", None),
            {i.function for i in found.workload.instances},
            self.progress,
        )
        if report is None:
            return  # it exited during the run: nothing it held can end any more
        prepared.manifest.update(drain=report.to_json())
        if report.outcome == ABANDONED:
            if self.status == RunStatus.COMPLETE:
                self.status, self.reason = (
                    RunStatus.INTERRUPTED,
                    f"interrupted while waiting for the {report.left:,} activations still queued or running on the embedded localwhisk",
                )
            self.warn(
                f"{report.left:,} activations abandoned ({report.why}): the embedded localwhisk records them as stopped before they completed"
            )
            for script in monitors.scripts.values():
                script.stop()
        elif report.outcome == STALLED:
            self.warn(
                f"stopped waiting for the embedded localwhisk with {report.left:,} activations still queued or running: {report.why}"
            )

    def _save_records(self, found: Preflight, prepared: Prepared) -> None:
        """Wait until the platform stored every activation of the run (deadline from the actions'
        time limits) and save them all; on Ctrl-C what was fetched is saved and the interrupt goes on."""
        keeper = next((used for used in self.platform.used if used.keeps_records), None)
        if keeper is None:
            return  # a generic endpoint keeps no records faasprof can read
        report: dict = {}
        prepared.manifest.activations = report
        try:
            keeper.fetch_records(found.run_dir, say=self.progress.say, report=report)
        finally:
            self._say_missing(report)

    def _records_from_store(self, run_dir: Path, manifest: rundir.Manifest, platform_exit: str | None) -> None:
        """The stopped embedded platform's store is the source of its records (``localwhisk.run_records``)."""
        try:
            report = save_store_records(run_dir, store_path(run_dir, LOCALWHISK_DIR), platform_exit=platform_exit)
        except (StoreReadError, OSError) as error:  # an unreadable store; a disk that filled up
            self.warn(f"activation records not saved: {getattr(error, 'strerror', None) or error}")
            return
        manifest.activations = report
        self.progress.say(
            f"saved {report['saved']:,} of {report['expected']:,} activation records from the embedded localwhisk's store to {rundir.ACTIVATIONS}"
        )
        self._say_missing(report)

    def _say_missing(self, report: dict) -> None:
        if report.get("missing"):
            self.warn(
                f"{report['missing']:,} of {report['expected']:,} activation records missing: {report['missing_why']}"
            )

    def _run_post_script(self, found: Preflight, monitors: Monitors) -> None:
        if found.workload.post_script is None:
            return
        post = ScriptRun("post_script", found.workload.post_script, [str(found.run_dir)], found.run_dir)
        monitors.scripts["post_script"] = post
        post.start()
        if not post.wait(POST_SCRIPT_TIMEOUT_S):
            post.stop()
            post.error = f"post_script {post.path} still running after {POST_SCRIPT_TIMEOUT_S:g} s; stopped"

    def finish(self, found: Preflight, prepared: Prepared, monitors: Monitors, result: DispatchResult | None) -> Path:
        """Scripts' failures, the embedded platform stopped, the verdict and the final manifest."""
        for script in monitors.scripts.values():
            script_failure = script.failed()
            if script_failure:
                self.warn(script_failure)
        if self.platform.embedded:
            self._stop_embedded(found.run_dir, prepared, result)
        if prepared.log.error is None:
            self._judge(found, prepared.manifest)
        try:
            self._finish_manifest(found, prepared.manifest, monitors, result)
        except OSError as error:
            # The disk is full: the manifest keeps status running, which every reader takes for a
            # torn run (plan vs send journal vs rows).
            raise RunError(
                f"{found.run_dir}: the run stopped: {self.reason}; the manifest could not be updated either ({error.strerror or error})"
            ) from None
        return found.run_dir

    def _stop_embedded(self, run_dir: Path, prepared: Prepared, result: DispatchResult | None) -> None:
        """The embedded platform stopped (it records what it still held), then its records read
        from its store, also when it exited during the run."""
        handle = self.platform.handle
        assert handle is not None  # only called when the platform is embedded
        platform_exit = None if handle.alive() else f"exited during the run (status {handle.process.returncode})"
        self.platform.stop()
        if prepared.log.error is None and result is not None:
            self._records_from_store(run_dir, prepared.manifest, platform_exit)

    def _judge(self, found: Preflight, manifest: rundir.Manifest) -> None:
        """The verdict against the thresholds, from the rows and the final outcomes their records
        give (only where the run saved records: else the HTTP outcomes)."""
        try:
            path = rundir.activations_path(found.run_dir)
            records = rundir.read_record_ids(path) if path.exists() else None
            missing_why = (manifest.activations or {}).get("missing_why")
            recorded = {i.name for i in found.workload.instances if self.platform.of(i).keeps_records}
            verdict = evaluate(
                rundir.read_invocations(found.run_dir),
                self.thresholds,
                records=records,
                missing_why=missing_why,
                recorded_instances=recorded,
            )
        except (OSError, FaasprofError) as error:
            self.warnings.append(f"the run's thresholds could not be checked ({error})")
            return
        manifest.verdict = verdict
        if not verdict["passed"]:
            self.progress.say("run " + verdict["message"])

    def _finish_manifest(
        self, found: Preflight, manifest: rundir.Manifest, monitors: Monitors, result: DispatchResult | None
    ) -> None:
        manifest.status = self.status
        manifest.status_reason = self.reason
        manifest.finished_utc = _utc_now()
        outcomes = result.outcomes if result is not None else {"not_sent": self.planned}
        manifest.counts = {
            "planned": self.planned,
            "sent": result.sent if result is not None else 0,
            "failed": sum(v for k, v in outcomes.items() if k not in ("ok", "not_sent")),
            "not_sent": outcomes.get("not_sent", 0),
            "outcomes": outcomes,
        }
        if result is not None:
            manifest.invoker.update(result.describe())
            self.warnings.extend(w for w in result.warnings if w not in self.warnings)
            manifest.invoker.pop("warnings", None)  # kept once, in the top-level list
        manifest.monitors = rundir.monitors_by_name([c.describe() for c in monitors.collectors])
        if found.hosts is not None:
            manifest.update(hosts=found.hosts.manifest_entry())
        manifest.scripts = {name: script.describe() for name, script in monitors.scripts.items()}
        if self.self_check is not None:
            manifest.update(self_check=self.self_check.describe())
            self.warnings.extend(w for w in self.self_check.warnings if w not in self.warnings)
        manifest.warnings = self.warnings
        if self.host_noise is not None:
            manifest.update(host_noise=self.host_noise.to_json())
        rundir.write_manifest(found.run_dir, manifest)


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


__all__ = ["Run", "execute"]
