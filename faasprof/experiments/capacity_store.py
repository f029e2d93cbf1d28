"""Stored capacities: the result of ``faasprof capacity`` kept per host, platform, function and memory.

A workload rate given as ``{"capacity_fraction": F}`` is F times the capacity of its function
measured on *this* host and platform (the paper's experiments are defined relative to capacity,
so they carry over to any machine). ``faasprof capacity`` records every result here;
``faasprof run`` resolves fractions from here, measuring first what is missing
(``resolve_workload``).

The store is one JSON file, ``~/.local/share/faasprof/capacity.json`` (``$FAASPROF_CAPACITY_STORE``
overrides the path), format version ``STORE_FORMAT_VERSION``::

    {"format_version": 2, "entries": {"<key>": {"capacity_rps": 94.2, "plus_minus_rps": 11.1,
                                                "interval_rps": [83.1, 105.3], "capacity_text": "94.2 ± 11/s, 7 probes",
                                                "load_1min": {"before": 1.2, "peak": 2.9, "cpus": 2},
                                                "lower_bound": false, "latency_reference": {...}, "result_file": ..., ...}}}

Versions: 1: first; 2: adds the interval (``plus_minus_rps``, ``interval_rps``, ``capacity_text``)
and the host's 1-minute load average during the search (``load_1min``). A version-1 file is read
as it is (its entries have neither: no interval, load unknown) and written back as version 2.

The key names the host (hostname, CPU model, logical CPUs), the platform (the embedded localwhisk
and its isolation, or the API host), the function and its memory limit: a capacity measured
elsewhere is never used. ``lower_bound`` (absent in entries written before it: false) marks a
search that kept up at every rate it tried, so ``capacity_rps`` is the least the function serves;
whoever uses the value says so. ``latency_reference`` is the search's lowest-rate latency, which a
run whose rates are fractions of the capacity carries for the analyzer's queueing rule.

A busy host serves less: a stored capacity measured at a load far from today's (the load now
outside the search's before..peak range by more than ``LOAD_FAR_PER_CPU`` per logical CPU) is
flagged in one warning line when ``run`` takes it (``load_warning``). Beside the capacity, the
platform's pause grace bounds the balanced band from below (``analyzer.stats.warm_rate_rps``):
``run`` (and ``plan``) says before it starts which band each capacity-relative rate falls in,
and that the balanced band is empty where the capacity is below the warm rate; a rate given with
a ``band`` (``{"capacity_fraction": 0.5, "band": "balanced"}``) that F × capacity misses is placed
inside it (``band_lines``, ``place_in_band``): the quick start's phases land in bands that exist.

A balanced phase must *hold* there, minutes after the search, so it is placed with a margin on
each side (``balanced_hold``): at least ``WARM_MARGIN`` × the warm rate (calls closer than a pause
grace, with room for a second sandbox's turns), at most the highest rate kept up / ``CAPACITY_DRIFT``.
On a shared 2-core host json_dumps's capacity moved by ×2 between searches minutes apart (14 to
28/s), and the quick start's balanced phase at half a capacity of 72.9/s ran with its execution
stretched from 13 to 166 ms by other work that started after the search: over-invoked. Where no
rate has both margins, ``run`` says before it starts that the band holds no rate here, why, and
the pause grace that opens one.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from pathlib import Path
from typing import Callable

from faasprof import rundir
from faasprof.errors import FormatError
from faasprof.experiments import capacity_noise
from faasprof.localwhisk.config import Settings
from faasprof.progress import QUIET, Progress

STORE_FORMAT_VERSION = 2
READABLE_FORMAT_VERSIONS = (1, 2)
# A stored capacity is flagged when the load now is outside its search's before..peak range by
# more than this many runnable tasks per logical CPU (a whole CPU's worth of other work).
LOAD_FAR_PER_CPU = 1.0
LOCALWHISK_PAUSE_GRACE_MS = float(Settings().pause_grace_ms)
# The analyzer's (analyzer.stats: MIN_SAMPLES_FOR_MODE and the half again failures and missing
# records may take; WARMUP_MAX_S, WARMUP_FRACTION), copied so that plan and validate, which read
# this module, load no pandas; tests/test_capacity_store_load.py holds them equal.
MODE_CALLS = 30
ANALYZER_WARMUP_MAX_S = 2.0
ANALYZER_WARMUP_FRACTION = 0.2
# A balanced phase's margins (module docstring): above the warm rate by this factor, below the
# highest rate kept up by the factor a shared host's capacity moved within minutes.
WARM_MARGIN = 1.25
CAPACITY_DRIFT = 2.0
STORE_ENV = "FAASPROF_CAPACITY_STORE"
# About how long capacity.SEARCH_DEFAULTS take on a 2-core host: 8-10 probes of 2 s with their warm-ups,
# analyses, drains and pauses took 48-53 s at load 10-18, 45-55 s on a quiet one; the search's budget
# (40 s once the bracket stands) now ends most searches at 40-45 s.
MEASURE_S = 45.0


def store_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or Path.home() / ".local" / "share" / "faasprof" / "capacity.json")


def host_identity() -> str:
    """hostname, CPU model and logical CPUs of this machine (what a capacity depends on)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{socket.gethostname()} | {model} | {os.cpu_count()} CPUs"


def platform_identity(connection, local_settings: dict | None) -> str:
    """The platform part of a capacity's key: what served it, and a control-plane model that slows
    it. OpenWhisk standalone and a localwhisk that `local start` left on the same port are two
    platforms (a localwhisk capacity once answered for OpenWhisk's on 127.0.0.1:3233). The pause
    grace is not part of it: it moves the band's warm edge, which each run takes from its own
    grace (``band_lines``), not the rate the platform sustains."""
    if connection is not None:
        served = f" ({connection.served_by})" if getattr(connection, "served_by", "") else ""
        return f"openwhisk {connection.apihost}{served}"
    settings = local_settings or {}
    text = f"localwhisk isolation={settings.get('isolation') or 'auto'}"
    if settings.get("control_plane"):
        text += f" control_plane={settings['control_plane']}"
    return text


def key(host: str, platform: str, function: str, memory_mb: int | None) -> str:
    return f"{host} || {platform} || {function} || {memory_mb if memory_mb is not None else 'default'} MB"


def _read(path: Path) -> dict:
    if not path.exists():
        return {"format_version": STORE_FORMAT_VERSION, "entries": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON ({error.msg}); delete it (capacities are measured again)") from None
    if (
        not isinstance(data, dict)
        or data.get("format_version") not in READABLE_FORMAT_VERSIONS
        or not isinstance(data.get("entries"), dict)
    ):
        raise FormatError(
            f"{path}: format_version {data.get('format_version') if isinstance(data, dict) else None!r} is not one of "
            f"{', '.join(map(str, READABLE_FORMAT_VERSIONS))}; delete it or upgrade faasprof"
        )
    return data


def lookup(store_key: str, path: Path | None = None) -> dict | None:
    """The stored entry (``capacity_rps`` and provenance) for ``store_key``, or None."""
    entry = _read(path or store_path())["entries"].get(store_key)
    return entry if isinstance(entry, dict) and entry.get("capacity_rps") else None


def record(store_key: str, result: dict, path: Path | None = None) -> dict:
    """Keep a ``faasprof capacity`` result under ``store_key``; returns the stored entry."""
    path = path or store_path()
    data = _read(path)
    entry = {
        "capacity_rps": result.get("capacity_rps"),
        "plus_minus_rps": result.get("plus_minus_rps"),
        "interval_rps": result.get("interval_rps"),
        "capacity_text": result.get("capacity_text"),
        "load_1min": result.get("load_1min"),
        "lower_bound": bool(result.get("capacity_is_lower_bound")),
        "latency_reference": result.get("reference"),
        "bounds_rps": result.get("bounds_rps"),
        "noise": result.get("noise"),
        "sandbox_busy_ms": result.get("sandbox_busy_ms"),
        "result_file": result.get("result_file"),
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "key": store_key,
    }
    data["entries"][store_key] = entry
    data["format_version"] = STORE_FORMAT_VERSION  # version-1 entries read the same under 2
    path.parent.mkdir(parents=True, exist_ok=True)
    rundir.write_json_atomic(path, data)
    return entry


def search_lines(function: str, result: dict, entry: dict | None) -> list[str]:
    """What a capacity search says when it ends, the same whoever ran it (``faasprof capacity`` on
    stdout, ``faasprof run``'s search for a capacity fraction on stderr): the capacity and its
    interval, where it was stored (``entry``: None when nothing was), the load, the host's
    contention, the rates whose probes disagreed, the reference latency, each probe, the result file."""
    lines = []
    capacity = result.get("capacity_rps")
    stopped = result.get("stopped_because") or "search ended"
    text = result.get("capacity_text") or (f"{capacity:.4g}/s" if capacity else "none")
    if capacity is None or entry is None:
        lines.append(f"{function}: no capacity found: {stopped}; nothing stored")
    elif entry["lower_bound"]:
        lines.append(
            f"{function}: capacity {text} (mode there: {result.get('mode_at_capacity')}; never over-invoked); {stopped}"
        )
        lines.append(f"stored as a lower bound in {store_path()}: workloads that take fractions of it are warned")
    elif not result.get("interval_rps") or not result.get("bounds_rps"):
        lines.append(f"{function}: capacity {text}; {stopped}")
        lines.append(f"stored in {store_path()} for this host and platform")
    else:
        lowest, highest = result["interval_rps"]
        low, high = result["bounds_rps"]
        widened = ""
        probes_interval = result.get("probes_interval_rps")
        if probes_interval and (abs(probes_interval[0] - lowest) > 1e-6 or abs(probes_interval[1] - highest) > 1e-6):
            widened = f", widened from the probes' {probes_interval[0]:.4g}–{probes_interval[1]:.4g}/s as the host's other work moved"
        lines.append(
            f"{function}: capacity {text} (interval {lowest:.4g}–{highest:.4g}/s{widened}; kept up at {low:.4g}/s, "
            f"mode {result.get('mode_at_capacity')}, over-invoked at {high:.4g}/s); {stopped}"
        )
        lines.append(f"stored in {store_path()} for this host and platform")
    load = result.get("load_1min") or {}
    if load.get("before") is not None:
        lines.append(
            f"host load (1-min average) during the search: {load['before']:.3g} before, {load['peak']:.3g} at its peak ({load.get('cpus')} CPUs)"
        )
    if result.get("contention"):
        lines.append(f"{result['contention']}: the capacity holds for a host as busy as that")
    split = result.get("split_rates_rps") or {}
    if split:
        at = ", ".join(f"{rate}/s kept up {kept} of {n}" for rate, (kept, n) in split.items())
        lines.append(
            f"probes disagreed ({at}): the host's other work moved the capacity during the search; the interval spans it"
        )
    reference = result.get("reference")
    if reference:
        lines.append(
            f"reference latency (queueing rule): p50 {reference['completion_latency_ms_p50']:.4g} ms at {reference['rate_rps']:.4g}/s, the lowest-rate probe"
        )
    for probe in result.get("probes") or []:
        probe_load = probe.get("load_1min")
        other = (probe.get("noise") or {}).get("other_cpus")
        lines.append(
            f"  {probe['rate_rps']:>9.4g}/s  {probe['mode']:<13} load {'-' if probe_load is None else f'{probe_load:.3g}':<5} "
            f"other {'-' if other is None else f'{other:.2g}':<4} {probe.get('run_dir')}"
        )
    if result.get("result_file"):
        lines.append(str(result["result_file"]))
    return lines


def describe(function: str, entry: dict) -> str:
    """A stored capacity in words: "N/s", or "≥ N/s (a lower bound ...)" for a search that never
    found the function over-invoked."""
    if entry.get("lower_bound"):
        return (
            f"≥ {entry['capacity_rps']:.4g}/s, a lower bound: the search kept up at every rate it tried, so a fraction "
            f"meant to over-invoke may not; measure higher with faasprof capacity {function} --max-rate"
        )
    if entry.get("capacity_text"):
        return str(entry["capacity_text"])
    return f"{entry['capacity_rps']:.4g}/s"


def load_warning(function: str, entry: dict, now_1min: float | None, cpus: int | None) -> str | None:
    """One line when ``entry`` was measured at a host load far from ``now_1min`` (module
    docstring); None when it was not, or when either load is unknown (entries of format 1)."""
    load = entry.get("load_1min")
    if not isinstance(load, dict):
        load = {}
    known = [
        v for v in (load.get("before"), load.get("peak")) if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    if not known or now_1min is None or not cpus:
        return None
    low, high = min(known), max(known)
    distance = max(low - now_1min, now_1min - high, 0.0)
    if distance <= LOAD_FAR_PER_CPU * cpus:
        return None
    measured = f"{low:.3g}" if low == high else f"{low:.3g}–{high:.3g}"
    return (
        f"capacity of {function} was measured at a 1-min load of {measured} ({cpus} CPUs, {entry.get('measured_utc') or 'earlier'}); "
        f"the load is {now_1min:.3g} now, so it may not hold today: measure it again with faasprof capacity {function}"
    )


def _load_now() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return None


def pause_grace_of(connection, local_settings: dict | None) -> float | None:
    """The pause grace (ms) of the platform a run will use, where faasprof knows it: the embedded
    localwhisk's setting or default; for a platform already running, the grace its set-up recorded
    with the connection (``PAUSE_GRACE_MS``: ``local start``, OpenWhisk standalone's start.sh, the
    testbed), else None (its own setting, unknown here)."""
    if connection is not None:
        value = (getattr(connection, "settings", None) or {}).get("pause_grace_ms")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None
    value = (local_settings or {}).get("pause_grace_ms")
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else LOCALWHISK_PAUSE_GRACE_MS
    )


def warm_rate_model(pause_grace_ms: float, busy_ms: float | None, distribution: str = "Uniform") -> float:
    """The rate above which calls keep one sandbox warm on this platform (the balanced band's lower
    edge), modelled from the pool: localwhisk gives a call the sandbox freed last (``reuse``
    newest), which pauses ``pause_grace_ms`` after its call ends, ``busy_ms`` (the activations'
    median duration) after it started. Evenly spaced calls (``Uniform``) find it warm while the
    gap is under grace + busy: above 1000 / (grace + busy). Poisson gaps exceed that with
    probability exp(-rate × (grace + busy)), and the analyzer calls a phase under-invoked from half
    its calls cold or resumed on (``analyzer.stats.UNDER_IDLE_FRACTION``): above ln 2 × 1000 /
    (grace + busy). The analyzer's ``warm_rate_rps`` is the Uniform case, the one it names."""
    window_ms = float(pause_grace_ms) + (float(busy_ms) if busy_ms and busy_ms > 0 else 0.0)
    rate = 1000.0 / window_ms
    return rate * math.log(2.0) if distribution == "Poisson" else rate


def band_lines(workload, capacities: dict[str, dict], pause_grace_ms: float | None) -> tuple[list[str], list[str]]:
    """(alerts, lines) before a run, for the capacity-relative rates of ``workload``: an alert for
    each function whose balanced band is empty here (its capacity at or below the warm rate,
    ``warm_rate_model``), and why; a line per rate saying the band it lies in. A rate given with a
    ``band`` that F × capacity misses, or that leaves its phase too few calls for a mode, is placed
    inside the band (``place_in_band``): its entry in ``capacities`` gets the ``rate_rps``
    ``Workload.with_capacities`` then takes, and its line says why, in words true of its numbers."""
    if pause_grace_ms is None or pause_grace_ms <= 0:
        return [], []
    alerts, lines, seen = [], [], set()
    for instance in workload.needs_capacity():
        entry = capacities.get(instance.name)
        if not entry:
            continue
        busy_ms = entry.get("sandbox_busy_ms")
        warm_rps = warm_rate_model(pause_grace_ms, busy_ms, instance.distribution)
        capacity = float(entry["capacity_rps"])
        kept, over = _band_edges(entry)
        rate = instance.capacity_fraction * capacity
        low, high = balanced_hold(warm_rps, kept)
        if low > high and instance.function not in seen and not entry.get("capacity_lower_bound"):
            seen.add(instance.function)  # a lower bound: the band may exist
            alerts.append(_no_balanced_rate(instance.function, pause_grace_ms, warm_rps, capacity, kept, busy_ms))
        steady_s = steady_seconds(instance.window_s)
        placed = place_in_band(instance.capacity_band, rate, warm_rps, kept, over, steady_s)
        how = f"{instance.capacity_fraction:g} × {capacity:.4g}/s = {rate:.4g}/s"
        if placed != rate:
            entry["rate_rps"] = round(placed, 6)
            how += f", {_why_placed(instance.capacity_band, rate, warm_rps, kept, over, steady_s)}: placed at {placed:.4g}/s"
        held = f" + {busy_ms:.3g} ms a call holds its sandbox" if busy_ms else ""
        lines.append(
            f"instances.{instance.name}: {how}, in the {band_of(placed, warm_rps, kept, over)} band of {instance.function} "
            f"(under-invoked below {warm_rps:.3g}/s, pause grace {pause_grace_ms:g} ms{held}; balanced up to {kept:.4g}/s, "
            f"holding {_hold_words(low, high)}; over-invoked above {over:.4g}/s)"
        )
    return alerts, lines


def _why_placed(band: str | None, rate: float, warm_rps: float, kept: float, over: float, steady_s: float) -> str:
    """Why ``place_in_band`` moved ``rate``, true of the numbers: a rate inside its band is moved
    only for too few calls (the under-invoked band) or for a margin (the balanced band)."""
    if band == "under-invoked" and rate < warm_rps and rate * steady_s < MODE_CALLS:
        return f"{rate * steady_s:.0f} calls in the phase's {steady_s:.3g} s steady window, too few for a mode (needs {MODE_CALLS})"
    if band == "under-invoked" and rate < warm_rps:
        return f"closer to the warm rate {warm_rps:.3g}/s than half of it"
    if band == "balanced" and warm_rps <= rate <= kept:
        return "inside the balanced band but without its margins (where it holds)"
    if band == "over-invoked" and rate > over:
        return f"inside the over-invoked band but less than {OVER_PLACEMENT:g} × its edge (where it holds)"
    return f"outside the {band} band"


def balanced_hold(warm_rps: float, kept_rps: float) -> tuple[float, float]:
    """The rates where a balanced phase holds (module docstring): ``WARM_MARGIN`` × the warm rate
    up to the highest rate kept up / ``CAPACITY_DRIFT``; none where the first is above the second."""
    return warm_rps * WARM_MARGIN, kept_rps / CAPACITY_DRIFT


def _hold_words(low: float, high: float) -> str:
    return f"{low:.3g}–{high:.3g}/s" if low <= high else "none"


def _no_balanced_rate(
    function: str, pause_grace_ms: float, warm_rps: float, capacity: float, kept: float, busy_ms: float | None = None
) -> str:
    """The one line that says, before a run, why no balanced phase of ``function`` holds here."""
    # The grace whose warm rate leaves both margins under the highest rate kept up (Uniform calls).
    busy = busy_ms if busy_ms and busy_ms > 0 else 0.0
    grace = max(math.ceil((1000.0 * WARM_MARGIN * CAPACITY_DRIFT / kept - busy) / 25.0) * 25.0, 25.0)
    held = f" and {busy:.3g} ms a call holds it" if busy else ""
    why = (
        f"its capacity here is {capacity:.3g}/s, so a rate it sustains is under-invoked and one above is over-invoked"
        if kept <= warm_rps
        else f"its capacity here is {capacity:.3g}/s (kept up at {kept:.3g}/s), and a shared host's capacity moves by "
        f"×{CAPACITY_DRIFT:g} within minutes: a balanced phase needs {WARM_MARGIN:g} × {warm_rps:.3g}/s up to "
        f"{kept:.3g}/{CAPACITY_DRIFT:g}/s, none"
    )
    return (
        f"the balanced band of {function} is empty here: a sandbox paused after {pause_grace_ms:g} ms idle{held} stays warm "
        f"only above {warm_rps:.3g}/s, and {why}; a phase meant to be balanced will not be (a pause grace of "
        f"{grace:g} ms, --pause-grace, opens one)"
    )


def steady_seconds(window_s) -> float:
    """The length of an activity window less the analyzer's warm-up (``analyzer.stats.phases``:
    min(2 s, 20 %)), where a phase's mode is judged."""
    length = float(window_s[1]) - float(window_s[0])
    return length - min(ANALYZER_WARMUP_MAX_S, ANALYZER_WARMUP_FRACTION * length)


# An over-invoked phase holds this far above the top of the capacity's interval, which already spans
# the probes' disagreement and the host's noise: over at every capacity the search found plausible.
# A rate below it is placed there. At 2× the quick start's over phase on a busy host (interval
# 21.8–94.3/s, a capacity near 45/s) sent 188.6/s for 15 s and drained its backlog for 53 s after the
# run; kept at 1.05× the top (1.5 × 39.2/s = 58.7/s against an interval of 22.6–55.8/s), it read
# balanced in 2 of 10 quick starts on a busy host whose other work had eased since the search.
OVER_PLACEMENT = 1.25


def _band_edges(entry: dict) -> tuple[float, float]:
    """The highest rate the capacity search kept up at and the lowest it was over-invoked at (its
    interval's ends; the capacity itself for an entry without one)."""
    interval = entry.get("interval_rps")
    capacity = float(entry["capacity_rps"])
    if isinstance(interval, list) and len(interval) == 2 and all(isinstance(v, (int, float)) for v in interval):
        return float(interval[0]), float(interval[1])
    return capacity, capacity


def band_of(rate: float, warm_rps: float, kept_rps: float, over_rps: float) -> str:
    """The band ``rate`` lies in: under-invoked below the warm rate, over-invoked above the
    capacity's interval, balanced between (where that exists)."""
    if rate > over_rps:
        return "over-invoked"
    if rate < warm_rps:
        return "under-invoked"
    return "balanced" if rate <= kept_rps else "between balanced and over-invoked (inside the capacity's interval)"


def place_in_band(
    band: str | None, rate: float, warm_rps: float, kept_rps: float, over_rps: float, steady_s: float | None = None
) -> float:
    """``rate``, or a rate inside ``band`` where ``rate`` lies outside it: under-invoked at half the
    warm rate at most (calls two pause graces apart), and, given the phase's ``steady_s``, often
    enough for ``MODE_CALLS`` calls there (0.05 × 27.9/s left 18 calls in 13 s: too few for a
    mode); balanced at the geometric middle of the warm rate and the highest rate kept up;
    over-invoked at ``OVER_PLACEMENT`` times the top of the capacity's interval, where a rate below that
    is placed (one just above the top holds no better than the top). A balanced rate is kept where it holds
    (``balanced_hold``), else placed at the geometric middle of where it holds; where no rate
    holds, at the middle of the warm rate and the highest rate kept up, and an empty band keeps
    ``rate`` (``band_lines`` says why). Where no rate holds, a rate between the warm rate and that
    middle is moved up to the middle too: the warm edge is modelled, and a phase on it reads
    under-invoked as soon as its calls hold their sandbox a little shorter."""
    if band == "under-invoked" and steady_s and rate * steady_s < MODE_CALLS:
        rate = min(MODE_CALLS / steady_s, warm_rps / 2)
    if band == "under-invoked" and rate > warm_rps / 2:
        return warm_rps / 2
    low, high = balanced_hold(warm_rps, kept_rps)
    if band == "balanced" and low <= high and not low <= rate <= high:
        return math.sqrt(low * high)
    # No rate has both margins: at least the middle of the warm rate and the highest rate kept up. A
    # rate just above the warm edge (13/s against a modelled 12.9/s) read under-invoked once in ten
    # quick starts, when the calls of that run held their sandbox 25 ms instead of the search's 27.5.
    middle = math.sqrt(warm_rps * kept_rps) if warm_rps < kept_rps else math.nan
    if band == "balanced" and low > high and warm_rps < kept_rps and not middle <= rate <= kept_rps:
        return middle
    if band == "over-invoked" and rate < OVER_PLACEMENT * over_rps:
        return OVER_PLACEMENT * over_rps
    return rate


def resolve_workload(
    workload,
    connection,
    local_settings: dict | None,
    out_dir,
    measure: Callable[..., dict],
    progress: Progress = QUIET,
    measure_s: float = MEASURE_S,
    noise_now: Callable[[], capacity_noise.HostNoise | None] = capacity_noise.measure_now,
):
    """``workload`` with its capacity-fraction rates resolved from the store, measuring each
    missing capacity first with ``measure`` (``faasprof.experiments.capacity.find_capacity`` with its
    defaults, probes under ``out_dir``; ``measure_s``: about how long one takes, as the user is
    told). ``progress`` gets the progress, the search's lines as ``faasprof capacity`` prints them
    (``search_lines``), and an alert for each capacity that is only a lower bound (a fraction of it
    may not be what the workload meant). A stored capacity whose probes saw other noise than
    ``noise_now()`` reads (``capacity_noise.alike``) is measured again, and the alert says why.

    The caller passes the search: this module imports none (nor the analyzer it runs), so
    ``plan`` and ``validate`` read the store without that cost."""
    host, platform = host_identity(), platform_identity(connection, local_settings)
    capacities: dict[str, dict] = {}
    for instance in workload.needs_capacity():
        store_key = key(host, platform, instance.function, instance.memory_mb)
        known = next((c for c in capacities.values() if c["capacity_key"] == store_key), None)
        if known is not None:  # several instances of one function: looked up (or measured) once
            capacities[instance.name] = dict(known)  # its own: a band may place its rate (band_lines)
            continue
        entry = lookup(store_key)
        why_again = ""
        if entry is not None:
            holds, why_again = capacity_noise.alike(entry.get("noise"), noise_now())
            if not holds:
                progress.alert(
                    f"the stored capacity of {instance.function} ({describe(instance.function, entry)}) is not reused: {why_again}; measuring it again (about {measure_s:.0f} s)"
                )
                entry = None
        if entry is None:
            if not why_again:
                progress.say(
                    f"no stored capacity of {instance.function} ({instance.memory_mb or 'default'} MB) on this host and platform: measuring it (about {measure_s:.0f} s)"
                )
            result = measure(
                instance.function,
                out_dir=out_dir,
                memory_mb=instance.memory_mb,
                connection=connection,
                local_settings=local_settings,
                progress=progress,
            )
            if not result.get("capacity_rps"):
                raise FormatError(
                    f"capacity of {instance.function}: none found ({result.get('stopped_because')}); run faasprof capacity {instance.function} with other --start-rate/--max-rate"
                )
            entry = record(store_key, result)
            for line in search_lines(instance.function, result, entry):  # as `faasprof capacity` prints them
                progress.say(line)
            where = f"stored in {store_path()}"
        else:
            where = f"stored {entry.get('measured_utc')}, {store_path()}"
            stale = load_warning(instance.function, entry, _load_now(), os.cpu_count())
            if stale:
                progress.alert(stale)
        line = f"capacity of {instance.function}: {describe(instance.function, entry)} ({where})"
        if entry.get("lower_bound"):
            progress.alert(line)
        else:
            progress.say(line)
        capacities[instance.name] = {
            **_resolution(entry, store_key),
            "capacity_lower_bound": bool(entry.get("lower_bound")),
        }
        if entry.get("latency_reference"):  # the yardstick of the analyzer's queueing rule (analyzer.stats, rule 2(d))
            capacities[instance.name]["latency_reference"] = entry["latency_reference"]
    alerts, lines = band_lines(workload, capacities, pause_grace_of(connection, local_settings))
    for line in alerts:
        progress.alert(line)
    for line in lines:
        progress.say(line)
    return workload.with_capacities(capacities)


def _resolution(entry: dict, store_key: str) -> dict:
    """What ``Workload.with_capacities`` takes of a stored capacity: the value and where it came from."""
    out = {
        "capacity_rps": entry["capacity_rps"],
        "capacity_source": str(entry.get("result_file") or store_path()),
        "capacity_key": store_key,
    }
    if entry.get("interval_rps") and not entry.get("lower_bound"):  # the bands' edges (band_lines)
        out["interval_rps"] = entry["interval_rps"]
    if entry.get("sandbox_busy_ms"):  # the warm rate's model (warm_rate_model)
        out["sandbox_busy_ms"] = entry["sandbox_busy_ms"]
    return out


def stored_capacities(workload, connection, local_settings: dict | None) -> dict[str, dict]:
    """The stored capacity behind each capacity-fraction rate of ``workload`` that has one on this
    host and platform, by instance name (as ``Workload.with_capacities`` takes them). Measures
    nothing and contacts nothing: ``plan`` and ``validate`` show what ``run`` would resolve."""
    host, platform = host_identity(), platform_identity(connection, local_settings)
    found = {}
    for instance in workload.needs_capacity():
        store_key = key(host, platform, instance.function, instance.memory_mb)
        entry = lookup(store_key)
        if entry is not None:
            found[instance.name] = {**_resolution(entry, store_key), "measured_utc": entry.get("measured_utc")}
    return found


def describe_fractions(workload, capacities: dict[str, dict]) -> list[str]:
    """One line per capacity-fraction rate of ``workload``: the rate the stored capacity makes it, or
    that ``run`` measures the capacity first."""
    lines = []
    for instance in workload.needs_capacity():
        memory = f" at {instance.memory_mb} MB" if instance.memory_mb is not None else ""
        what = (
            f"instances.{instance.name}.rate: {instance.capacity_fraction:g} × capacity of {instance.function}{memory}"
        )
        entry = capacities.get(instance.name)
        if entry is None:
            lines.append(f"{what} (not measured yet: `run` measures it first, about {MEASURE_S:.0f} s)")
        else:
            lines.append(
                f"{what} = {instance.capacity_fraction * entry['capacity_rps']:.4g}/s "
                f"(capacity {entry['capacity_rps']:.4g}/s, measured {entry.get('measured_utc') or 'earlier'}, stored in {store_path()})"
            )
    return lines
