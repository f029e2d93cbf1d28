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

import datetime as dt
import os
import shutil
import time
from pathlib import Path
from typing import Any

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
from faasprof.invoker.scripts import ScriptRun
from faasprof.invoker.send_loop import loop_name, send, sigterm_as_interrupt
from faasprof.invoker.sender import ensure_fd_budget
from faasprof.invoker.shards import ShardedDispatch, choose_processes, peak_rate_per_s
from faasprof.invoker.storage import start_workload_storage
from faasprof.invoker.verdict import check_thresholds, evaluate
from faasprof.localwhisk.run_records import StoreReadError, save_store_records, store_path
from faasprof.monitoring.collectors import tool_versions
from faasprof.monitoring.host import collect_host
from faasprof.monitoring.hosts import RemoteHosts
from faasprof.monitoring.noise import HostNoise, NoiseSampler, noise_line
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, pushback_line
from faasprof.platforms.openwhisk.connection import Connection
from faasprof.platforms.registry import platforms_used
from faasprof.progress import QUIET, Progress
from faasprof.workload.schedule import build_schedule, empty_plan_problem

START_LEAD_NS = 50_000_000  # zero is this far after the collectors are up: the first send is not late
SCRIPT_GRACE_S = 10.0  # how long runtime_script may outlive the test before it is stopped
POST_SCRIPT_TIMEOUT_S = 600.0


# -- pre-flight -----------------------------------------------------------------------------------


# -- the run --------------------------------------------------------------------------------------


def execute(
    workload: Any,
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
            run.preflight(out_dir, connection, local_settings)
            return run.run()
        finally:
            run.release()


def _create_run_dir(out_dir, test_name: str) -> Path:
    try:
        return rundir.create_run_dir(out_dir, test_name)
    except OSError as error:
        raise ConfigError(
            f"--out {out_dir}: cannot create the run directory ({error.strerror or error}); pass --out DIR with a writable directory"
        ) from None


class Run:
    """One run of a workload, step by step (the module's docstring says why in this order):
    ``preflight``, then ``run``: ``prepare`` (manifest, plan, log), ``start_monitors``,
    ``dispatch``, ``complete_rows`` and ``stop_monitors`` whatever happened, ``after_test``
    (post_script, records) and ``finish`` (verdict, manifest); ``release`` in the end.

    Until the send loop has run, ``status``/``reason`` say why it did not; ``warnings`` gathers
    what the manifest keeps (each also said on ``progress``)."""

    def __init__(
        self,
        workload: Any,
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
        self.platform = PlatformSet()
        self.storage = None
        self.run_dir: Path | None = None
        self.running = False  # the run directory is the run's: pre-flight no longer removes it
        self.requests: list = []
        self.collectors: list = []  # those that passed their check
        self.hosts: RemoteHosts | None = None  # the remote hosts measured (monitoring.hosts)
        self.warnings: list[str] = []
        self.host: dict = {}
        self.tools: dict = {}
        self.planned = len(self.schedule)
        self.manifest: rundir.Manifest | None = None
        self.log: rundir.InvocationLog | None = None
        self.scripts: dict[str, ScriptRun] = {}
        self.started: list = []  # the collectors started, in order
        self.result: DispatchResult | None = None
        self.dispatcher: Dispatcher | None = None
        self.sharded: ShardedDispatch | None = None
        self.failure: BaseException | None = None
        self.status, self.reason = "interrupted", "faasprof stopped before the test started"
        self.noise = NoiseSampler()  # what other work took while the run went (host_noise)
        self.host_noise: HostNoise | None = None

    def warn(self, text: str) -> None:
        """A warning the manifest keeps, said as it happens."""
        self.warnings.append(text)
        self.progress.warn(text)

    # -- 1. pre-flight ----------------------------------------------------------------------------

    def preflight(self, out_dir: str | os.PathLike, connection: Connection | None, local_settings: dict | None) -> None:
        """Everything checked before the run directory is used; it exists from here only when the
        embedded platform keeps its data there (``release`` removes it again on a failure)."""
        workload, platform, progress = self.workload, self.platform, self.progress
        # The remote hosts first: one that cannot be reached is said before anything starts.
        self.hosts = connect_hosts(workload, progress)
        # A `storage` block: its servers on loopback, their endpoints in every instance's params.
        self.storage, workload = start_workload_storage(workload, progress.say)
        self.workload = workload
        for cls in platforms_used(workload.instances):
            if cls.reached_by_connection:
                if connection is None:
                    # The embedded platform keeps its data in the run directory, so the directory
                    # exists from here on; a failed pre-flight removes it again.
                    self.run_dir = _create_run_dir(out_dir, workload.test_name)
                    platform.handle, platform.log_dir = start_embedded_platform(
                        local_settings, self.run_dir / LOCALWHISK_DIR, progress
                    )
                    connection = Connection(
                        apihost=platform.handle.apihost,
                        auth=platform.handle.auth,
                        namespace=platform.handle.namespace,
                        source="embedded",
                    )
                if connection.insecure:
                    self.options.insecure = True
            used = cls.for_workload(workload, connection)
            platform.used.append(used)  # closed by release() whatever happens next
            used.check(workload.instances)
            # Every function the workload invokes exists: on OpenWhisk its own functions and missing
            # catalogue functions are deployed; any other missing action is refused with the deploy commands.
            platform.actions.update(used.ensure_deployed(workload))
        self.requests = [
            platform.of(instance).prepare_request(instance, workload.origin) for instance in workload.instances
        ]
        ensure_fd_budget(self.options.max_connections, origins=len({request.origin for request in self.requests}))
        self.collectors, self.warnings = usable_collectors(workload, platform, progress)
        for text in limit_warnings(platform, self.schedule):
            self.warn(text)
        self.host, self.tools = collect_host("/"), tool_versions()
        if self.run_dir is None:
            self.run_dir = _create_run_dir(out_dir, workload.test_name)

    def release(self) -> None:
        """The platforms and the storage stop; a run directory pre-flight made but no run used goes."""
        self.platform.stop()
        if self.hosts is not None:
            self.hosts.close()
        if self.storage is not None:
            self.storage.stop()
        if self.run_dir is not None and not self.running:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- 2. to 5. the run -------------------------------------------------------------------------

    def run(self) -> Path:
        """The run on the directory pre-flight made; every planned invocation gets its row."""
        self.running = True
        try:
            self.prepare()
        except KeyboardInterrupt:
            # Nothing was sent nor measured: the directory goes as after a failed pre-flight
            # (``release``) rather than stay a torn run of nothing.
            self.running = False
            raise
        try:
            self.start_monitors()
            self.dispatch()
        except KeyboardInterrupt:
            self.status, self.reason = "interrupted", "interrupted (Ctrl-C or SIGTERM) before the test started"
        except Exception as error:  # a bug or an OS failure: still leave a complete, readable run
            self.failure = error
            self.status, self.reason = "interrupted", f"faasprof failed: {type(error).__name__}: {error}"
        finally:
            self.complete_rows()
            self.stop_monitors()
        self._say_outcome()
        self.after_test()
        return self.finish()

    def prepare(self) -> None:
        """The send processes chosen, the manifest (status ``running``), the plan and the log."""
        workload, options, schedule, run_dir = self.workload, self.options, self.schedule, self.run_dir
        choice = choose_processes(options.send_processes, peak_rate_per_s(schedule.intended_ns))
        options.send_processes = choice.processes
        self.manifest = rundir.new_manifest(
            workload.test_name,
            workload.resolved(),
            rundir.ClockAnchor(),  # provisional: the zero is taken when the collectors are up
            platform=self.platform.describe(),
            host=self.host,
            tools=self.tools,
            invoker={**options.describe(), "send_processes_choice": choice.describe(), "event_loop": loop_name()},
            monitors=[],
            scripts={},
            warnings=list(self.warnings),
        )
        self.manifest.counts["planned"] = self.planned
        try:
            rundir.write_manifest(run_dir, self.manifest)
            # The plan on disk before the first send: a reader of a torn run compares it with the
            # send journal and the rows, never taking the rows present for the plan.
            rundir.write_plan(
                run_dir,
                np.ascontiguousarray(schedule.intended_ns, dtype=np.int64),
                np.ascontiguousarray(schedule.instance_idx, dtype=np.int32),
                [i.name for i in workload.instances],
                [i.function for i in workload.instances],
            )
            self.log = rundir.InvocationLog(run_dir)
        except OSError as error:
            raise RunError(
                f"{run_dir}: cannot write the run directory ({error.strerror or error}); free space there or pass --out on another file system"
            ) from None
        if choice.worth_saying:
            self.progress.say(f"send processes: {choice.processes} ({choice.why})")
        hint = realtime_hint(choice.busiest_second, options.realtime_priority, realtime_permitted())
        if hint:
            self.progress.say(hint)

    # -- monitors: collectors and scripts ---------------------------------------------------------

    def start_monitors(self) -> None:
        """The collectors, in order, then the ``runtime_script`` (given the test's duration)."""
        self.noise.start()
        for collector in self.collectors:
            collector.start(self.run_dir)
            self.started.append(collector)
        if self.hosts is not None:
            self.hosts.start(self.run_dir)
        workload = self.workload
        if workload.runtime_script is not None:
            duration_arg = (
                str(int(workload.duration_s))
                if float(workload.duration_s).is_integer()
                else repr(float(workload.duration_s))
            )
            script = ScriptRun("runtime_script", workload.runtime_script, [duration_arg], self.run_dir)
            self.scripts["runtime_script"] = script
            script.start()
            if script.error:
                self.progress.warn(script.error)

    def stop_monitors(self) -> None:
        """The collectors stop; the ``runtime_script`` gets a grace after a complete run."""
        self.noise.stop()
        self.host_noise = self.noise.summary()
        for collector in self.started:
            collector.stop()
        if self.hosts is not None:
            self.hosts.check(self.warn)  # a host lost since the dispatcher's last check is said too
            self.hosts.stop()
        runtime = self.scripts.get("runtime_script")
        if runtime is not None and not runtime.wait(SCRIPT_GRACE_S if self.status == "complete" else 0.5):
            runtime.stop()

    def _check_log(self) -> tuple[str, str] | None:
        """The first failed write (a full disk) stops the run: sending on would only lose more rows."""
        return ("aborted", self.log.error) if self.log.error is not None else None

    def _check_platform(self) -> tuple[str, str] | None:
        handle = self.platform.handle
        if handle is not None and hasattr(handle, "alive") and not handle.alive():
            return (
                "interrupted",
                f"the embedded localwhisk exited during the run (see {getattr(handle, 'log_path', None)})",
            )
        return None

    def _check_hosts(self) -> None:
        """A lost host is a warning: the run goes on with the others (``RemoteHosts.check``)."""
        if self.hosts is not None:
            self.hosts.check(self.warn)

    # -- dispatch: the send loop ------------------------------------------------------------------

    def dispatch(self) -> None:
        """The zero taken once the collectors are up, then the schedule sent by one dispatcher or
        by the send processes (which start, and read their shares, before the zero)."""
        workload, schedule, options, log = self.workload, self.schedule, self.options, self.log
        checks = [self._check_log, collector_check(self.started, self.warn), self._check_platform, self._check_hosts]
        instances = [(i.name, i.function) for i in workload.instances]
        if options.send_processes > 1:
            self.sharded = ShardedDispatch(
                self.run_dir,
                schedule.intended_ns,
                schedule.instance_idx,
                instances,
                self.requests,
                log,
                options,
                checks=checks,
                progress=self.progress,
                duration_s=workload.duration_s,
            )
            self.sharded.start()
        zero_ns = time.monotonic_ns() + START_LEAD_NS
        clock = rundir.ClockAnchor(zero_ns, time.time_ns() + START_LEAD_NS)
        self.manifest.clock = clock.to_json()
        self.manifest.monitors = rundir.monitors_by_name([c.describe() for c in self.started])
        if self.hosts is not None:
            self.hosts.set_zero(zero_ns)
            self.manifest.update(hosts=self.hosts.manifest_entry())
        rundir.write_manifest(self.run_dir, self.manifest)
        self.progress.say(
            f"run directory {self.run_dir}; {self.planned:,} invocations over {workload.duration_s:g} s"
            + (f" from {self.sharded.processes} send processes" if self.sharded is not None else "")
        )
        if self.sharded is not None:
            self.result = self.sharded.run(zero_ns)
            self.manifest.invoker.update(self.sharded.describe())
        else:
            self.dispatcher = Dispatcher(
                schedule.intended_ns,
                schedule.instance_idx,
                instances,
                self.requests,
                log.append,
                options,
                checks=checks,
                progress=self.progress,
                duration_s=workload.duration_s,
                journal=log.sent,
            )
            self.result = send(self.dispatcher, zero_ns)
        self.status, self.reason = self.result.status, self.result.reason

    def _say_outcome(self) -> None:
        result = self.result
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

    def complete_rows(self) -> None:
        """Whatever stopped the run, one row per planned invocation, and the log closed; a failed
        write makes the run ``aborted`` (a reader reconstructs the rows that could not be written)."""
        log, status, reason = self.log, self.status, self.reason
        if self.result is None and self.dispatcher is not None:
            self.dispatcher.close_after_failure(status, reason)
        if self.result is None and self.sharded is not None:
            self.sharded.close_after_failure(reason)
        log.close()
        if self.result is None and self.dispatcher is None and self.sharded is None and log.error is None:
            try:
                _complete_rows_after_failure(self.run_dir, self.schedule, self.workload, reason)
            except OSError as error:
                log.error = f"{self.run_dir}: cannot write the run's files ({error.strerror or error}); free space on that file system or pass --out on another one"
        if log.error is None:
            return
        if reason != log.error and status != "complete":
            self.warnings.append(f"before the write failed, the run had stopped ({status}: {reason})")
        self.status, self.reason = "aborted", log.error
        if log.lost:
            self.warnings.append(
                f"{log.lost:,} rows could not be written; readers reconstruct them from the plan and the send journal (unanswered/unrecorded)"
            )

    def after_test(self) -> None:
        """``post_script``, then the embedded platform's accepted activations waited for, or another
        platform's records fetched when an analysis follows (``--analyze``); a Ctrl-C cuts this short."""
        doing = "running post_script"
        try:
            self._run_post_script()
            if self.platform.embedded:
                doing = "waiting for the embedded localwhisk's activations"
                self._drain_platform()
            elif self.save_records and self.result is not None and self.log.error is None:
                doing = "waiting for activation records"
                self._save_records()
        except KeyboardInterrupt:
            # The records fetched so far are saved (see _save_records); the run keeps the status
            # and reason it already had, and says what was cut short.
            if self.status == "complete":
                self.status, self.reason = (
                    "interrupted",
                    f"interrupted while {doing} (every invocation had been sent and answered)",
                )
            else:
                self.warnings.append(f"interrupted again while {doing}")
            for script in self.scripts.values():
                script.stop()
        except FaasprofError as error:  # the platform failed while its records were read
            self.warn(f"activation records not saved: {error}")
        except OSError as error:  # the disk filled up while they were written
            self.warn(f"activation records not saved: {error.strerror or error}")

    def _drain_platform(self) -> None:
        """The embedded platform's accepted activations waited for; the manifest's ``drain`` says how it ended."""
        keeper = next((used for used in self.platform.used if used.keeps_records), None)
        report = drain_embedded(
            self.platform.handle,
            getattr(keeper, "client", None),
            {i.function for i in self.workload.instances},
            self.progress,
        )
        if report is None:
            return  # it exited during the run: nothing it held can end any more
        self.manifest.update(drain=report.to_json())
        if report.outcome == ABANDONED:
            if self.status == "complete":
                self.status, self.reason = (
                    "interrupted",
                    f"interrupted while waiting for the {report.left:,} activations still queued or running on the embedded localwhisk",
                )
            self.warn(
                f"{report.left:,} activations abandoned ({report.why}): the embedded localwhisk records them as stopped before they completed"
            )
            for script in self.scripts.values():
                script.stop()
        elif report.outcome == STALLED:
            self.warn(
                f"stopped waiting for the embedded localwhisk with {report.left:,} activations still queued or running: {report.why}"
            )

    def _save_records(self) -> None:
        """Wait until the platform stored every activation of the run (deadline from the actions'
        time limits) and save them all; on Ctrl-C what was fetched is saved and the interrupt goes on."""
        keeper = next((used for used in self.platform.used if used.keeps_records), None)
        if keeper is None:
            return  # a generic endpoint keeps no records faasprof can read
        report: dict = {}
        self.manifest.activations = report
        try:
            keeper.fetch_records(self.run_dir, say=self.progress.say, report=report)
        finally:
            self._say_missing(report)

    def _records_from_store(self, platform_exit: str | None) -> None:
        """The stopped embedded platform's store is the source of its records (``localwhisk.run_records``)."""
        try:
            report = save_store_records(
                self.run_dir, store_path(self.run_dir, LOCALWHISK_DIR), platform_exit=platform_exit
            )
        except (StoreReadError, OSError) as error:  # an unreadable store; a disk that filled up
            self.warn(f"activation records not saved: {getattr(error, 'strerror', None) or error}")
            return
        self.manifest.activations = report
        self.progress.say(
            f"saved {report['saved']:,} of {report['expected']:,} activation records from the embedded localwhisk's store to {rundir.ACTIVATIONS}"
        )
        self._say_missing(report)

    def _say_missing(self, report: dict) -> None:
        if report.get("missing"):
            self.warn(
                f"{report['missing']:,} of {report['expected']:,} activation records missing: {report['missing_why']}"
            )

    def _run_post_script(self) -> None:
        if self.workload.post_script is None:
            return
        post = ScriptRun("post_script", self.workload.post_script, [str(self.run_dir)], self.run_dir)
        self.scripts["post_script"] = post
        post.start()
        if not post.wait(POST_SCRIPT_TIMEOUT_S):
            post.stop()
            post.error = f"post_script {post.path} still running after {POST_SCRIPT_TIMEOUT_S:g} s; stopped"

    def finish(self) -> Path:
        """Scripts' failures, the embedded platform stopped, the verdict and the final manifest."""
        for script in self.scripts.values():
            script_failure = script.failed()
            if script_failure:
                self.warn(script_failure)
        if self.platform.embedded:
            self._stop_embedded()
        if self.log.error is None:
            self._judge()
        try:
            self._finish_manifest()
        except OSError as error:
            # The disk is full: the manifest keeps status running, which every reader takes for a
            # torn run (plan vs send journal vs rows).
            raise RunError(
                f"{self.run_dir}: the run stopped: {self.reason}; the manifest could not be updated either ({error.strerror or error})"
            ) from None
        if self.failure is not None:
            raise RunError(f"{self.run_dir}: the run stopped: {self.reason}") from self.failure
        return self.run_dir

    def _stop_embedded(self) -> None:
        """The embedded platform stopped (it records what it still held), then its records read
        from its store, also when it exited during the run."""
        handle = self.platform.handle
        platform_exit = None if handle.alive() else f"exited during the run (status {handle.process.returncode})"
        self.platform.stop()
        if self.log.error is None and self.result is not None:
            self._records_from_store(platform_exit)

    def _judge(self) -> None:
        """The verdict against the thresholds, from the rows and the final outcomes their records
        give (only where the run saved records: else the HTTP outcomes)."""
        try:
            path = rundir.activations_path(self.run_dir)
            records = rundir.read_record_ids(path) if path.exists() else None
            missing_why = (self.manifest.activations or {}).get("missing_why")
            recorded = {i.name for i in self.workload.instances if self.platform.of(i).keeps_records}
            verdict = evaluate(
                rundir.read_invocations(self.run_dir),
                self.thresholds,
                records=records,
                missing_why=missing_why,
                recorded_instances=recorded,
            )
        except (OSError, FaasprofError) as error:
            self.warnings.append(f"the run's thresholds could not be checked ({error})")
            return
        self.manifest.verdict = verdict
        if not verdict["passed"]:
            self.progress.say("run " + verdict["message"])

    def _finish_manifest(self) -> None:
        manifest, result = self.manifest, self.result
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
        manifest.monitors = rundir.monitors_by_name([c.describe() for c in self.started])
        if self.hosts is not None:
            manifest.update(hosts=self.hosts.manifest_entry())
        manifest.scripts = {name: script.describe() for name, script in self.scripts.items()}
        manifest.warnings = self.warnings
        if self.host_noise is not None:
            manifest.update(host_noise=self.host_noise.to_json())
        rundir.write_manifest(self.run_dir, manifest)


def _complete_rows_after_failure(run_dir: Path, schedule, workload, reason: str) -> None:
    """The send loop never ran: still one row per planned invocation, all ``not_sent``."""
    names = [i.name for i in workload.instances]
    functions = [i.function for i in workload.instances]
    rundir.append_rows(
        run_dir,
        (
            (seq, names[idx], functions[idx], intended, None, None, "not_sent", None, None, reason)
            for seq, (intended, idx) in enumerate(zip(schedule.intended_ns.tolist(), schedule.instance_idx.tolist()))
        ),
    )


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


__all__ = ["execute", "Run"]
