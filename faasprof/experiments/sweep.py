"""Sweeps: one workload run at every point of a product of parameter values.

A workload's ``sweep`` block names parameters and their values::

    "sweep": {"parameters": {"llc_ways": [11, 6, 2, 1], "memory_mb": [256, 512]},
              "repeat": 3, "order": "random", "cooldown_s": 5}

``faasprof sweep`` checks every point before the first one runs (masks against the CPU's ways,
bandwidth steps, parameters the platform cannot change), then runs each point as an ordinary run
directory inside one sweep directory, records in each run's manifest the values requested and
the values actually applied (read back from resctrl/pqos, not just requested), and finally
analyses the runs, compares them and plots every metric against each swept parameter with error
bars from the repeats.

How each parameter is applied:

- ``llc_ways`` / ``mba_percent``: an RDT class of service for the function CPUs
  (``faasprof.monitoring.allocation``), restored after the point whatever happens.
- ``memory_mb``: every selected OpenWhisk instance invokes the variant ``<function>-<MB>`` (the
  same code deployed with that memory limit).
- ``rate`` / ``rate_scale``: ``rate`` sets the rate of the instances whose distribution is driven by
  one (Poisson, Uniform); ``rate_scale`` makes every selected instance send that many times as
  often, as its distribution scales itself (``faasprof.workload.arrivals``: a rate, Burst gaps, a trace). A
  distribution the table does not hold is an error, never skipped.
- ``pause_grace_ms`` / ``user_memory_mb``: localwhisk is started with them for the point (each
  run starts its own). A real OpenWhisk needs a redeploy for these: the sweep refuses them there
  and says how.
- ``image_padding_mb``: localwhisk (isolation docker) runs the Python actions of the point in an
  image padded with that much incompressible filler (faasprof/experiments/padding.py builds it once).
- ``code_padding_mb``: the selected instances deploy a copy of their ``source`` whose zip carries
  that much filler (faasprof/experiments/padding.py).

Repeat ``r`` of a point uses ``random_seed + r``: every point sees the same arrivals, and repeats
sample the arrival process. Points run in a seeded random order by default, so slow drifts of the
machine do not masquerade as an effect of the parameter.
"""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path
from typing import Any, TypedDict

from faasprof.errors import ConfigError, FaasprofError
from faasprof.experiments import padding as padding_mod
from faasprof.experiments.sweep_plan import SweepPoint, duration_text, expand_points, sweep_parameters
from faasprof.experiments.sweep_report import SWEEP_FILE, write_sweep_report
from faasprof.invoker.run import execute
from faasprof.monitoring import allocation
from faasprof.platforms import registry
from faasprof.progress import QUIET, Progress
from faasprof.rundir import RunStatus, create_run_dir, update_manifest, write_json_atomic
from faasprof.workload.arrivals import distribution_for, distribution_of, rated_distributions
from faasprof.workload.spec import Workload, workload_from_dict

SWEEP_FORMAT_VERSION = 1
ALLOCATION_PARAMETERS = ("llc_ways", "mba_percent")
LOCALWHISK_PARAMETERS = ("pause_grace_ms", "user_memory_mb")
_VARIANT_SUFFIX = re.compile(r"-\d+$")


def _selected(workload_dict: dict, sweep: dict) -> list[str]:
    return list(sweep.get("instances") or workload_dict["instances"].keys())


def apply_point(workload_dict: dict, point: SweepPoint, origin: str = "<workload>") -> dict:
    """The workload of one point: a copy with the point's values written in and no sweep block."""
    data = copy.deepcopy(workload_dict)
    sweep = data.pop("sweep", None) or {}
    names = _selected(data, sweep)
    values = point.values
    data["test_name"] = f"{data['test_name']}-p{point.order:03d}-{point.label}"
    if data.get("random_seed") is not None:
        data["random_seed"] = int(data["random_seed"]) + point.repeat
    # Memory is a limit of a function the platform hosts (an OpenWhisk action), not of a URL.
    hosts_functions = registry.names_functions(data.get("endpoint", registry.DEFAULT_ENDPOINT))
    for name in names:
        spec = data["instances"][name]
        process = distribution_for(distribution_of(spec), f"{origin}: instances.{name}.distribution")
        if "rate" in values and process.rated:
            spec["rate"] = values["rate"]
        if "rate_scale" in values:
            process.scale(spec, float(values["rate_scale"]))
        if "memory_mb" in values and hosts_functions:
            base = _VARIANT_SUFFIX.sub("", spec["application"])
            spec["application"] = f"{base}-{values['memory_mb']}"
            spec["memory_mb"] = int(values["memory_mb"])
    local = {key: values[key] for key in LOCALWHISK_PARAMETERS if key in values}
    if local:
        platform = data.setdefault("platform", {})
        platform.setdefault("localwhisk", {}).update(local)
    return data


class SweepCheck(TypedDict):
    """What ``check_sweep`` found the sweep's allocation points need."""

    caps: allocation.Capabilities | None  # what the host can allocate; None without llc_ways/mba_percent
    plans: dict[tuple[int | None, int | None], allocation.AllocationPlan]  # by (llc_ways, mba_percent)


def check_sweep(workload: Workload, connection: Any = None, root: str = "/") -> SweepCheck:
    """Everything that can be wrong with a sweep, before its first point (ConfigError with every
    problem); returns the allocation plans of its points."""
    parameters = sweep_parameters(workload)
    problems = _parameter_problems(workload, parameters, connection)
    # Each point's workload must itself be valid (a variant name the catalogue lacks, a rate < 0…).
    for point in expand_points(workload):
        if point.repeat:
            continue
        try:
            workload_from_dict(
                padding_mod.pad_code(apply_point(workload.raw, point), workload, point.values),
                origin=f"{workload.origin} (sweep point {point.label})",
                path=workload.path,
                seed=workload.seed,
                grants=padding_mod.point_grants(workload, point.values),  # a point may name other files
            )
        except ConfigError as error:
            problems.extend(line for line in error.problems if line not in problems)
    checked: SweepCheck = {"caps": None, "plans": {}}
    if any(key in parameters for key in ALLOCATION_PARAMETERS) and not problems:
        checked = _allocation_plans(workload, parameters, root, problems)
    if problems:
        raise ConfigError(problems[0], problems=problems)
    return checked


def _parameter_problems(workload: Workload, parameters: dict, connection: Any) -> list[str]:
    """What the swept parameters cannot apply to: no instance takes them, or the platform cannot change them."""
    origin = workload.origin
    names = _selected(workload.raw, workload.sweep or {})
    instances = {i.name: i for i in workload.instances}
    problems: list[str] = []
    if "rate" in parameters and not any(distribution_for(instances[n].distribution).rated for n in names):
        problems.append(
            f"{origin}: sweep.parameters.rate: no {' or '.join(rated_distributions())} instance to apply it to; use rate_scale, or name instances in sweep.instances"
        )
    if "memory_mb" in parameters and not any(instances[n].names_functions for n in names):
        problems.append(
            f"{origin}: sweep.parameters.memory_mb: applies to functions a platform hosts (OpenWhisk actions), and this workload has none (endpoint is {workload.endpoint})"
        )
    if connection is not None:
        for key in LOCALWHISK_PARAMETERS:
            if key in parameters:
                problems.append(
                    f"{origin}: sweep.parameters.{key}: a real OpenWhisk needs a redeploy to change it; "
                    "set it in setup/openwhisk_settings.yml and run ./setup.sh --testbed --openwhisk-only between runs, "
                    "or sweep it on localwhisk (no --apihost)"
                )
    if "image_padding_mb" in parameters:
        problems.extend(padding_mod.check_image_padding(workload.raw, origin, connection))
    return problems


def _allocation_plans(workload: Workload, parameters: dict, root: str, problems: list[str]) -> SweepCheck:
    """The host's allocation capabilities and a plan per (llc_ways, mba_percent) point; what the
    host cannot do goes to ``problems``."""
    caps = allocation.discover(root=root)
    # CAT and MBA apply per CPU, and sandboxes float over every CPU unless pinned: by default
    # the allocation covers all CPUs, so no function escapes it on an unallocated one.
    cpus = (workload.sweep or {}).get("function_cpus")
    control = None
    plans: dict[tuple[int | None, int | None], allocation.AllocationPlan] = {}
    try:
        allocation.check_sweep_values(
            caps,
            llc_ways=parameters.get("llc_ways", ()),
            mba_percent=parameters.get("mba_percent", ()),
            field_prefix=f"{workload.origin}: sweep.parameters.",
            cpus=cpus,
            control_plane_cpus=control,
        )
    except ConfigError as error:
        problems.extend(error.problems)
    else:
        for llc in parameters.get("llc_ways", [None]):
            for mba in parameters.get("mba_percent", [None]):
                plans[(llc, mba)] = allocation.plan_allocation(
                    caps, llc_ways=llc, mba_percent=mba, cpus=cpus, control_plane_cpus=control
                )
    return {"caps": caps, "plans": plans}


class SweepLog:
    """``sweep.json``: the sweep's plan and, point by point, where its run went and what was applied."""

    def __init__(self, sweep_dir: Path, workload: Workload, points: list[SweepPoint]):
        self.path = sweep_dir / SWEEP_FILE
        self.points: list[dict[str, object]] = [
            {
                "order": p.order,
                "index": p.index,
                "repeat": p.repeat,
                "values": p.values,
                "label": p.label,
                "status": "planned",
                "run_dir": None,
                "applied": None,
                "error": None,
            }
            for p in points
        ]
        self.data = {
            "format_version": SWEEP_FORMAT_VERSION,
            "kind": "sweep",
            "test_name": workload.test_name,
            "status": RunStatus.RUNNING,
            "workload": workload.resolved(),
            "parameters": sweep_parameters(workload),
            "points": self.points,
        }
        self.save()

    def save(self) -> None:
        write_json_atomic(self.path, self.data)

    def point(self, order: int, **changes: Any) -> None:
        self.points[order].update(changes)
        self.save()

    def finish(self, status: str, **extra: Any) -> None:
        self.data["status"] = status
        self.data.update(extra)
        self.save()


def _sleep(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.5))


def run_sweep(
    workload: Workload,
    out_dir: str | Path,
    connection: Any = None,
    analyze: bool = True,
    progress: Progress = QUIET,
    root: str = "/",
    run_point=None,
    allocation_options: dict | None = None,
) -> Path:
    """Run every point; return the sweep directory.

    ``run_point(workload, sweep_dir, local_settings)`` runs one point and returns its run
    directory (default: ``faasprof.invoker.run.execute``); ``allocation_options`` go to
    ``faasprof.monitoring.allocation.Allocation`` (tests pass an emulated resctrl there).
    """
    checked = check_sweep(workload, connection, root=root)
    if checked["caps"] is not None:
        cleanup_options = {k: v for k, v in (allocation_options or {}).items() if k in ("state_dir", "fs", "runner")}
        for line in allocation.cleanup_leftovers(root=root, **cleanup_options):
            progress.alert(line)  # a host setting put back: said even under --quiet
    points = expand_points(workload)
    if run_point is None:

        def run_point(point_workload, sweep_dir, local_settings):
            # Each point saves its records, as `run --analyze` does: the sweep's analysis (or a later
            # `analyze`, after the platform may have gone) reads them from the run directory.
            return execute(
                point_workload,
                sweep_dir,
                connection=connection,
                local_settings=local_settings,
                progress=progress,
                save_records=True,
            )

    sweep_dir = create_run_dir(out_dir, f"{workload.test_name}-sweep", monitors=False)
    log = SweepLog(sweep_dir, workload, points)
    cooldown_s = float((workload.sweep or {}).get("cooldown_s", 5))
    status: str = RunStatus.COMPLETE  # or the sweep's own "incomplete": a point failed
    started = time.monotonic()
    try:
        for done, point in enumerate(points):
            progress.say(
                f"[{point.order + 1:3d}/{len(points)}] {point.label}  ({sweep_eta(done, len(points), time.monotonic() - started, workload.duration_s, cooldown_s)})"
            )
            point_dict = padding_mod.pad_code(apply_point(workload.raw, point), workload, point.values)
            point_workload = workload_from_dict(
                point_dict,
                origin=f"{workload.origin} (sweep point {point.label})",
                path=workload.path,
                seed=workload.seed + point.repeat,
                grants=padding_mod.point_grants(workload, point.values),
            )
            local_settings = dict((point_dict.get("platform") or {}).get("localwhisk") or {})
            local_settings.update(padding_mod.point_settings(point.values))
            plan = checked["plans"].get((point.values.get("llc_ways"), point.values.get("mba_percent")))
            log.point(point.order, status="running")
            try:
                caps = checked["caps"]
                if plan is not None and caps is not None:  # a plan is made only with the host's capabilities
                    with allocation.Allocation(caps, plan, **(allocation_options or {})) as applied:
                        run_dir = run_point(point_workload, sweep_dir, local_settings)
                        applied_values = applied.applied
                else:
                    run_dir = run_point(point_workload, sweep_dir, local_settings)
                    applied_values = None
            except FaasprofError as error:
                log.point(point.order, status="failed", error=str(error))
                progress.alert(f"sweep point {point.label} failed: {error}")  # also in the sweep log
                status = "incomplete"
                continue
            record = {
                "values": point.values,
                "repeat": point.repeat,
                "order": point.order,
                "applied": _applied_summary(point.values, applied_values, local_settings),
            }
            update_manifest(run_dir, sweep_point=record)
            log.point(point.order, status="done", run_dir=Path(run_dir).name, applied=record["applied"])
            if point.order + 1 < len(points) and cooldown_s > 0:
                _sleep(cooldown_s)
    except KeyboardInterrupt:
        log.finish(RunStatus.INTERRUPTED)
        raise
    log.finish(status)
    if analyze:
        summarise_sweep(sweep_dir, progress=progress)
    return sweep_dir


def _applied_summary(values: dict, allocation_applied: dict | None, local_settings: dict) -> dict:
    """What the point really ran with: allocation read back from the hardware, the rest as set."""
    applied: dict[str, Any] = {}
    for key, value in values.items():
        if key in ALLOCATION_PARAMETERS:
            continue
        applied[key] = local_settings.get(key, value) if key in LOCALWHISK_PARAMETERS else value
    if "docker_images" in local_settings:  # the padded image of an image_padding_mb point
        applied["docker_images"] = local_settings["docker_images"]
    if allocation_applied is not None:
        applied["allocation"] = allocation_applied
        for key in ALLOCATION_PARAMETERS:
            if key in values:
                applied[key] = _one_value(allocation_applied.get(key))
    return applied


def _one_value(per_cache_id: Any) -> Any:
    """One value when every cache id (socket) got the same setting, else the per-id dict."""
    if isinstance(per_cache_id, dict):
        distinct = set(per_cache_id.values())
        if len(distinct) == 1:
            return distinct.pop()
    return per_cache_id


def sweep_eta(done: int, total: int, elapsed_s: float, duration_s: float, cooldown_s: float) -> str:
    """Time left, from the points done so far (their mean time), else from the planned durations."""
    left = total - done
    if left <= 0:
        return "done"
    if done:
        return f"ETA {duration_text(elapsed_s / done * left)}"
    return f"ETA about {duration_text(left * (duration_s + cooldown_s))} (planned)"


def summarise_sweep(sweep_dir: str | Path, progress: Progress = QUIET) -> Path:
    """Analyse every run of the sweep, compare them, and plot each metric against each parameter."""
    report = write_sweep_report(Path(sweep_dir), progress=progress)
    padding_mod.write_cold_start_vs_size(Path(sweep_dir))
    return report
