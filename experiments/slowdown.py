"""Containerisation slowdown (the paper's Figures 15 and 16): the same function natively and in FaaS.

Per function, in this order:

1. **native**: ``functions.native.run_native`` with one unrecorded warm-up call, ``repeat`` calls in
   one long-lived worker; execution time is measured inside the worker, the round trip over its
   pipe is the native "latency". The native run directory is kept under ``native/``.
2. **warm** (alive sandbox): one unrecorded call creates the sandbox, then ``repeat`` blocking calls
   back to back, each sent as soon as the previous one answered (well inside the pause grace).
3. **resumed** (paused sandbox): ``repeat`` blocking calls, each sent ``pause_wait_s`` after the
   previous answer, past the platform's pause grace, so each one unpauses the sandbox.

FaaS execution time is the activation record's ``duration`` (OpenWhisk's resolution: 1 ms);
latency is the client's blocking round trip (monotonic clock). Where a record carries the
``containerState`` annotation (localwhisk) a call that did not start as intended (a warm call that
found no warm sandbox, a resumed call that found none paused) is kept in ``calls.csv`` but left out
of the medians, and counted in ``slowdown.csv``; without the annotation (OpenWhisk) every
successful call counts. Only calls with final outcome ``success`` (``faasprof.outcomes``) enter the
statistics; the others are counted as failures.

Medians carry distribution-free 95 % confidence intervals (``analyzer.stats.quantile_ci``; null
below 6 samples: too few for a 95 % interval). Slowdown factors are FaaS median / native median,
for execution time and for latency. A FaaS execution median under the record's 1 ms resolution
gives no execution slowdown (null, not zero); the latency slowdown is always defined.

Figure 16 fits ``slowdown = a · native_exec_ms ** b`` by least squares in log-log space over the
functions with both values; ``b`` is the exponent shown on the plot and stored in the manifest.

Output directory ``<out>/slowdown-<stamp>/`` (never reused): ``manifest.json`` (format version,
functions, platform, settings, fits), ``slowdown.csv``, ``calls.csv`` (every call),
``fig15_slowdown_per_function.png``, ``fig16_slowdown_vs_native.png``, ``native/`` (native run
directories) and, on the embedded platform, ``localwhisk/`` (its records and log).

Format versions (``SLOWDOWN_FORMAT_VERSION``): 1: first version.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from analyzer.stats import quantile_ci
from faasprof import __version__, rundir
from faasprof.errors import ConfigError, FaasprofError
from faasprof.outcomes import final_outcome
from functions import native
from functions.catalogue import FunctionEntry
from localwhisk.embedded import start_embedded
from platforms.openwhisk import Connection, OpenWhiskClient
from platforms.openwhisk_deploy import ensure_actions

SLOWDOWN_FORMAT_VERSION = 1
SLOWDOWN_CSV = "slowdown.csv"
CALLS_CSV = "calls.csv"
FIG15 = "fig15_slowdown_per_function.png"
FIG16 = "fig16_slowdown_vs_native.png"
RECORD_RESOLUTION_MS = 1.0  # OpenWhisk records carry start/end in whole milliseconds
REMOTE_PAUSE_WAIT_S = 11.0  # past OpenWhisk 2.x's 10 s pause grace (1.0.0: 50 ms)
EMBEDDED_PAUSE_MARGIN_S = 0.5
INTENDED_STATE = {"warm": "warm", "resumed": "resumed"}
CALL_COLUMNS = ("function", "phase", "seq", "outcome", "container_state", "exec_ms", "latency_ms", "wait_ms", "init_ms", "activation_id", "error")
MEASURES = ("exec_ms", "latency_ms")


@dataclass
class SlowdownOptions:
    repeat: int = 10
    pause_wait_s: float | None = None  # None: the embedded grace + margin, or REMOTE_PAUSE_WAIT_S
    isolation: str | None = None
    pause_grace_ms: float | None = None
    memory_mb: int | None = None
    extra_settings: dict = field(default_factory=dict)


@dataclass
class Call:
    function: str
    phase: str  # native | warm | resumed
    seq: int
    outcome: str
    container_state: str = ""
    exec_ms: float = math.nan
    latency_ms: float = math.nan
    wait_ms: float = math.nan
    init_ms: float = math.nan
    activation_id: str = ""
    error: str = ""

    @property
    def counts(self) -> bool:
        """Enters the statistics: a success that started as its phase intends (when the record says)."""
        if self.outcome != "success":
            return False
        intended = INTENDED_STATE.get(self.phase)
        return intended is None or self.container_state in ("", intended)


# -- measuring ---------------------------------------------------------------------------------


def measure_native(entry: FunctionEntry, repeat: int, out_dir: Path, say: Callable[[str], None] | None = None) -> tuple[list[Call], Path]:
    """``repeat`` native calls after one warm-up; the native run directory is kept in ``out_dir``."""
    options = native.NativeOptions(repeat=repeat, warmup=1, extra_manifest={"slowdown": {"phase": "native"}})
    run_dir, _ = native.run_native(entry, out_dir, options, progress=say)
    calls = []
    with open(run_dir / native.NATIVE_CSV, newline="") as handle:
        for row in csv.DictReader(handle):
            outcome = "success" if row["outcome"] == "ok" else row["outcome"]
            calls.append(Call(entry.name, "native", int(row["seq"]), outcome, exec_ms=_float(row["exec_ms"]),
                              latency_ms=_float(row["round_trip_ms"]), error=row.get("error", "")))
    return calls, run_dir


def invoke_once(client, name: str, params: dict, phase: str, seq: int, clock=time.monotonic_ns) -> Call:
    """One blocking call; a failed call is a row of data, never an exception."""
    sent = clock()
    try:
        response = client.invoke(name, params, blocking=True)
    except FaasprofError as error:
        return Call(name, phase, seq, "failed", latency_ms=(clock() - sent) / 1e6, error=str(error)[:300])
    latency_ms = (clock() - sent) / 1e6
    status = response.status_code
    http = "ok" if 200 <= status < 300 else "app_error" if status == 502 else "throttled" if status == 429 else "failed"
    try:
        body = response.json()
    except ValueError:
        body = None
    record = body if isinstance(body, dict) and "activationId" in body and "response" in body else None
    if status == 202 and record is None:
        # The blocking wait ran out (OpenWhisk answers 202 with the id): no execution time to use.
        return Call(name, phase, seq, "no_record", latency_ms=latency_ms, activation_id=str((body or {}).get("activationId", "")),
                    error="blocking wait expired (202)")
    outcome = final_outcome(http, record)
    call = Call(name, phase, seq, outcome, latency_ms=latency_ms)
    if record is None:
        call.error = f"HTTP {status}: {str(body)[:200]}"
        return call
    annotations = {a.get("key"): a.get("value") for a in record.get("annotations") or () if isinstance(a, dict)}
    call.activation_id = str(record.get("activationId", ""))
    call.container_state = str(annotations.get("containerState") or "")
    call.exec_ms = _float(record.get("duration"))
    call.wait_ms = _float(annotations.get("waitTime"))
    call.init_ms = _float(annotations.get("initTime"))
    if outcome != "success":
        call.error = str((record.get("response") or {}).get("result"))[:300]
    return call


def measure_faas(client, name: str, params: dict, repeat: int, pause_wait_s: float, sleep=time.sleep,
                 say: Callable[[str], None] | None = None) -> list[Call]:
    """The warm-up call, ``repeat`` warm calls back to back, then ``repeat`` calls after a pause each."""
    warmup = invoke_once(client, name, params, "warmup", 0)
    if warmup.outcome != "success" and say:
        # Measured anyway: every failed call is a row of calls.csv and the factors stay null.
        say(f"{name}: the first call failed ({warmup.outcome}: {warmup.error or 'no detail'}); see calls.csv")
    calls = [warmup]
    calls += [invoke_once(client, name, params, "warm", seq) for seq in range(repeat)]
    if say:
        say(f"{name}: {repeat} warm calls done; {repeat} calls after {pause_wait_s:g} s pauses each")
    for seq in range(repeat):
        sleep(pause_wait_s)
        calls.append(invoke_once(client, name, params, "resumed", seq))
    return calls


# -- statistics --------------------------------------------------------------------------------


def median_ci(values) -> tuple[float, float, float]:
    data = np.sort(np.asarray([v for v in values if math.isfinite(v)], dtype=float))
    return quantile_ci(data, 0.5)


def summarise_function(function: str, calls: list[Call]) -> dict:
    """One row of ``slowdown.csv`` from every call of one function."""
    row: dict = {"function": function}
    medians: dict[tuple[str, str], float] = {}
    for phase in ("native", "warm", "resumed"):
        mine = [c for c in calls if c.phase == phase]
        used = [c for c in mine if c.counts]
        row[f"{phase}_n"] = len(used)
        row[f"{phase}_failed"] = sum(1 for c in mine if c.outcome != "success")
        if phase in INTENDED_STATE:
            row[f"{phase}_other_start"] = sum(1 for c in mine if c.outcome == "success" and not c.counts)
        for measure in MEASURES:
            estimate, low, high = median_ci([getattr(c, measure) for c in used])
            label = "round_trip_ms" if phase == "native" and measure == "latency_ms" else measure
            row[f"{phase}_{label}"] = estimate
            row[f"{phase}_{label}_ci_low"] = low
            row[f"{phase}_{label}_ci_high"] = high
            medians[(phase, measure)] = estimate
        if phase != "native":
            row[f"{phase}_wait_ms"] = median_ci([c.wait_ms for c in used])[0]
    for phase in ("warm", "resumed"):
        row[f"slowdown_exec_{phase}"] = _ratio(medians[(phase, "exec_ms")], medians[("native", "exec_ms")], floor=RECORD_RESOLUTION_MS)
        row[f"slowdown_latency_{phase}"] = _ratio(medians[(phase, "latency_ms")], medians[("native", "latency_ms")])
    return row


def fit_power_law(x, y) -> dict | None:
    """``y = a · x ** b`` by least squares on logs over the finite positive pairs; None below two."""
    pairs = [(a, b) for a, b in zip(x, y) if _positive(a) and _positive(b)]
    if len({p[0] for p in pairs}) < 2:
        return None
    lx = np.log([p[0] for p in pairs])
    ly = np.log([p[1] for p in pairs])
    exponent, intercept = np.polyfit(lx, ly, 1)
    fitted = intercept + exponent * lx
    total = float(((ly - ly.mean()) ** 2).sum())
    r2 = 1.0 - float(((ly - fitted) ** 2).sum()) / total if total > 0 else math.nan
    return {"coefficient": float(math.exp(intercept)), "exponent": float(exponent), "r2": r2, "points": len(pairs)}


def fits(rows: list[dict]) -> dict:
    out = {}
    for measure in ("exec", "latency"):
        for phase in ("warm", "resumed"):
            out[f"{measure}_{phase}"] = fit_power_law([r["native_exec_ms"] for r in rows], [r[f"slowdown_{measure}_{phase}"] for r in rows])
    return out


# -- plots -------------------------------------------------------------------------------------


def plot_fig15(rows: list[dict], path: Path) -> None:
    """Slowdown per function, log scale, alive (warm) vs paused (resumed); execution and latency."""
    functions = [r["function"] for r in rows]
    x = np.arange(len(functions))
    fig, axes = plt.subplots(1, 2, figsize=(max(7.0, 1.1 * len(functions) + 4), 4.2))
    for ax, measure, title in ((axes[0], "exec", "execution time (record duration)"), (axes[1], "latency", "latency (client round trip)")):
        for offset, phase, label, colour in ((-0.2, "warm", "alive (warm)", "#2ca02c"), (0.2, "resumed", "paused (resumed)", "#ff7f0e")):
            values = [r[f"slowdown_{measure}_{phase}"] for r in rows]
            shown = [v if _positive(v) else np.nan for v in values]
            ax.bar(x + offset, shown, width=0.4, label=label, color=colour)
            for xi, v in zip(x, values):
                if not _positive(v):
                    ax.annotate("n/a", (xi + offset, 1.0), ha="center", va="bottom", fontsize=7, color="grey")
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(x)
        ax.set_xticklabels(functions, rotation=30, ha="right")
        ax.set_ylabel("slowdown vs native (×, log)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Fig 15: slowdown in FaaS vs native, alive vs paused sandbox")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_fig16(rows: list[dict], fitted: dict, path: Path) -> None:
    """Slowdown against native execution time, log-log, with the fitted power law and its exponent."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    native_ms = [r["native_exec_ms"] for r in rows]
    for ax, measure, title in ((axes[0], "exec", "execution time"), (axes[1], "latency", "latency")):
        for phase, label, colour, marker in (("warm", "alive (warm)", "#2ca02c", "o"), ("resumed", "paused (resumed)", "#ff7f0e", "s")):
            points = [(n, r[f"slowdown_{measure}_{phase}"], r["function"]) for n, r in zip(native_ms, rows)]
            points = [p for p in points if _positive(p[0]) and _positive(p[1])]
            if points:
                ax.scatter([p[0] for p in points], [p[1] for p in points], color=colour, marker=marker, label=label)
                for px, py, name in points:
                    ax.annotate(name, (px, py), fontsize=7, xytext=(3, 3), textcoords="offset points")
            fit = fitted.get(f"{measure}_{phase}")
            if fit:
                xs = np.geomspace(min(p[0] for p in points), max(p[0] for p in points), 50)
                ax.plot(xs, fit["coefficient"] * xs ** fit["exponent"], color=colour, linestyle="--",
                        label=f"fit {label}: {fit['coefficient']:.3g}·x^{fit['exponent']:.2f} (R² {fit['r2']:.2f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("native execution time (ms, log)")
        ax.set_ylabel("slowdown vs native (×, log)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
        if not ax.has_data():
            ax.text(0.5, 0.5, "no function with both values", transform=ax.transAxes, ha="center")
    fig.suptitle("Fig 16: slowdown against native execution time, power-law fit")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- the experiment ----------------------------------------------------------------------------


def write_results(out: Path, rows: list[dict], calls: list[Call], manifest: dict) -> dict:
    """slowdown.csv, calls.csv, both figures and the manifest (with the fits); returns the fits."""
    fitted = fits(rows)
    columns = list(rows[0]) if rows else ["function"]
    with open(out / SLOWDOWN_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
    with open(out / CALLS_CSV, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CALL_COLUMNS)
        for c in calls:
            writer.writerow([_cell(getattr(c, name)) for name in CALL_COLUMNS])
    plot_fig15(rows, out / FIG15)
    plot_fig16(rows, fitted, out / FIG16)
    manifest.update(fits=fitted, files={"slowdown_csv": SLOWDOWN_CSV, "calls_csv": CALLS_CSV, "fig15": FIG15, "fig16": FIG16})
    rundir.write_json_atomic(out / "manifest.json", manifest)
    return fitted


def run_slowdown(entries: list[FunctionEntry], out_dir: str | os.PathLike, options: SlowdownOptions, connection=None,
                 progress: bool = True, sleep=time.sleep) -> Path:
    """Measure every function (module docstring); returns the output directory."""
    if options.repeat < 1:
        raise ConfigError(f"--repeat: must be >= 1 (got {options.repeat})")
    if options.pause_wait_s is not None and options.pause_wait_s <= 0:
        raise ConfigError(f"--pause-wait: must be > 0 s (got {options.pause_wait_s:g})")
    if not entries:
        raise ConfigError("FUNCTION: name at least one function, or pass --all")
    for entry in entries:
        entry.require_available()
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    out = rundir.create_run_dir(out_dir, "slowdown", monitors=False)
    handle = None
    manifest: dict = {"format_version": SLOWDOWN_FORMAT_VERSION, "kind": "slowdown", "status": "running"}
    measuring = False  # before the first measurement a failure (pre-flight) leaves no directory behind
    try:
        settings: dict = dict(options.extra_settings)
        if options.isolation:
            settings["isolation"] = options.isolation
        if options.pause_grace_ms is not None:
            settings["pause_grace_ms"] = options.pause_grace_ms
        if connection is None:
            if say:
                say("starting the embedded localwhisk (no --apihost or ~/.wskprops names a platform)")
            handle = start_embedded(data_dir=out / "localwhisk", **settings)
            connection = Connection(apihost=handle.apihost, auth=handle.auth, namespace=handle.namespace, source="embedded")
            grace_s = float(settings.get("pause_grace_ms", 50)) / 1000.0
            pause_wait_s = options.pause_wait_s if options.pause_wait_s is not None else grace_s + EMBEDDED_PAUSE_MARGIN_S
        else:
            pause_wait_s = options.pause_wait_s if options.pause_wait_s is not None else REMOTE_PAUSE_WAIT_S
        client = OpenWhiskClient(connection)
        info = client.info()
        names = [entry.name for entry in entries]
        actions = ensure_actions(client, names, options.memory_mb)
        manifest.update({
            "generated_by": {"faasprof": __version__, "git_commit": rundir.git_commit()},
            "created_utc": rundir.utc_stamp(),
            "functions": names,
            "repeat": options.repeat,
            "pause_wait_s": pause_wait_s,
            "platform": {"embedded": handle is not None, **connection.describe(), "info": info, "actions": actions,
                         "localwhisk": getattr(handle, "settings", None)},
            "definitions": {
                "exec_ms": "native: measured inside the worker; FaaS: the activation record's duration (1 ms resolution)",
                "latency_ms": "native: round trip over the worker's pipe; FaaS: the blocking call's round trip at the client",
                "slowdown": "FaaS median / native median; null when undefined (FaaS execution median under 1 ms)",
                "ci": "distribution-free 95 % interval of the median (order statistics); null below 6 samples",
            },
        })
        rundir.write_json_atomic(out / "manifest.json", manifest)
        measuring = True
        rows: list[dict] = []
        every: list[Call] = []
        for entry in entries:
            calls, native_dir = measure_native(entry, options.repeat, out / "native", say)
            manifest.setdefault("native_runs", {})[entry.name] = str(native_dir.relative_to(out))
            calls += measure_faas(client, entry.name, entry.sample_params(), options.repeat, pause_wait_s, sleep=sleep, say=say)
            row = summarise_function(entry.name, calls)
            rows.append(row)
            every += calls
            if say:
                say(f"{entry.name}: native {_f(row['native_exec_ms'])} ms; warm {_f(row['warm_exec_ms'])} ms (×{_f(row['slowdown_exec_warm'])}), "
                    f"resumed {_f(row['resumed_exec_ms'])} ms (×{_f(row['slowdown_exec_resumed'])}); latency ×{_f(row['slowdown_latency_warm'])} / ×{_f(row['slowdown_latency_resumed'])}")
        client.close()
        manifest["status"] = "complete"
        write_results(out, rows, every, manifest)
        return out
    except BaseException as error:
        if not measuring:
            raise
        # The directory stays (native runs, localwhisk records); its manifest says how it ended.
        status = "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
        manifest.update(status=status, reason=f"{type(error).__name__}: {error}"[:300])
        rundir.write_json_atomic(out / "manifest.json", manifest)
        raise
    finally:
        if handle is not None:
            handle.stop(timeout_s=10)
        if not measuring:
            shutil.rmtree(out, ignore_errors=True)


def load_rows(path: Path) -> list[dict]:
    """``slowdown.csv`` read back with numbers as floats (empty cells: NaN)."""
    with open(path, newline="") as handle:
        return [{k: (v if k == "function" else _float(v)) for k, v in row.items()} for row in csv.DictReader(handle)]


def _ratio(numerator: float, denominator: float, floor: float = 0.0) -> float:
    if not (_positive(numerator) and _positive(denominator)) or numerator < floor:
        return math.nan
    return numerator / denominator


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _cell(value):
    if isinstance(value, float):
        return "" if not math.isfinite(value) else round(value, 4)
    return value


def _f(value) -> str:
    return "-" if not isinstance(value, (int, float)) or not math.isfinite(value) else f"{value:.3g}"
