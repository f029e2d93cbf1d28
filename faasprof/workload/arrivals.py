"""Arrival processes: the instants (seconds since test start) at which one instance invokes.

Every generator is a pure function of the instance and a ``numpy.random.Generator``, and keeps its
events in the half-open activity window ``[start, end)``.

- Poisson: exponential gaps accumulated from the window start until the window end. The count is
  whatever the process gives: nothing is lost at low rates (FaaSProfiler drew ``int(2·rate·T)``
  gaps and so produced no event at all when rate·T < 0.5), and a longer window keeps the earlier
  arrivals identical.
- A Poisson or Uniform instance at rate 0 is muted: no invocations, as FaaSProfiler generates
  none for it (its workloads are read unchanged).
- Uniform: exactly periodic at ``rate``; the first event at a seeded point of the first period
  (``phase: true``), at the window start (``false``) or at a given fraction of the period.
- Burst: ``burst_size`` invocations at the same instant, bursts ``burst_gap_s`` apart (fixed), or
  ``burst_gap_s`` plus an exponential of mean ``burst_gap_mean_s`` (shifted exponential), the first
  burst at the window start.
- Trace: FaaSProfiler's ``interarrivals_list`` (times from test start), or a ``trace_file``: per-minute
  counts in the Azure Functions 2019 layout, spread within each minute (seeded uniform points, or
  evenly with a seeded shift; never all at the minute boundary), or a list of timestamps; a trace
  file's time zero is the window start.

``DISTRIBUTIONS`` is the one table of them: each is a small object that knows its keys and how to
check them, its arrival instants, its expected count, the field that drives that count, and how a
sweep scales it. Everything that depends on an instance's distribution (the workload model, the
schedule, a sweep, the analyzer's instance table) looks it up there when it runs; a name it does not
hold is an error, never skipped (ARCHITECTURE.md, "Add a distribution"). Out of the tree, an
installed package adds one by an entry point in ``faasprof.distributions`` (``PLUGIN_GROUP``;
``faasprof.plugins``, docs/plugins.md): it joins the table after the built-ins, and its name, its
keys' ``key_schemas`` and its ``required`` keys join the workload schema (``plugin_schema_part``).
"""

from __future__ import annotations

import codecs
import csv
import itertools
import math
import os
from abc import ABC, abstractmethod
from array import array
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import numpy as np

from faasprof import plugins
from faasprof.bounded import MAX_TRACE_FILE_BYTES, open_bounded
from faasprof.errors import ConfigError
from faasprof.workload import messages
from faasprof.workload.messages import Problems
from faasprof.workload.references import find_input

AZURE_KEY_COLUMNS = ("HashOwner", "HashApp", "HashFunction", "Trigger")
# A month of minute columns beside the key columns: more is a file that is not a trace (a 99 MB
# header of ten million columns took 1.7 GB to split), refused before it is split.
MAX_TRACE_COLUMNS = len(AZURE_KEY_COLUMNS) + 31 * 24 * 60
MAX_TRACE_LINE_CHARS = 1024 * 1024
# A trace file's own keys: which row, from which minute, how a minute's count is spread and scaled.
AZURE_LAYOUT_KEYS = ("trace_row", "trace_start_minute", "trace_spread", "trace_scale")


def _accumulate_gaps(rng: np.random.Generator, start_s: float, end_s: float, mean_count: float, draw) -> np.ndarray:
    """Times start + cumsum(gaps) below end_s, drawing gaps in chunks sized from the expected count.

    ``draw(rng, n)`` returns n gaps. Chunks keep memory bounded and the stream prefix-stable.
    """
    chunks = []
    t = start_s
    remaining = max(mean_count, 0.0)
    while t < end_s:
        n = int(remaining + 6.0 * math.sqrt(remaining) + 16)
        times = t + np.cumsum(draw(rng, n))
        chunks.append(times)
        t = float(times[-1])
        remaining = max(mean_count * (end_s - t) / max(end_s - start_s, 1e-12), 0.0)
    if not chunks:
        return np.empty(0)
    times = np.concatenate(chunks)
    return times[times < end_s]


def poisson(rng: np.random.Generator, rate_per_s: float, start_s: float, end_s: float) -> np.ndarray:
    scale = 1.0 / rate_per_s
    # The first arrival is one exponential gap after the window start, as for any Poisson process.
    return _accumulate_gaps(rng, start_s, end_s, rate_per_s * (end_s - start_s), lambda r, n: r.exponential(scale, n))


def uniform(
    rng: np.random.Generator, rate_per_s: float, start_s: float, end_s: float, phase: bool | float = True
) -> np.ndarray:
    period = 1.0 / rate_per_s
    if phase is True:
        offset = float(rng.uniform(0.0, period))
    elif phase is False:
        offset = 0.0
    else:
        offset = float(phase) * period
    first = start_s + offset
    if first >= end_s:
        return np.empty(0)
    count = int(math.ceil((end_s - first) / period))
    times = first + np.arange(count + 1, dtype=np.float64) * period
    return times[times < end_s]


def burst(
    rng: np.random.Generator,
    burst_size: int,
    gap_s: float,
    start_s: float,
    end_s: float,
    gap_distribution: str = "fixed",
    gap_mean_s: float | None = None,
) -> np.ndarray:
    if gap_distribution == "shifted_exponential":
        extra_mean_s = float(gap_mean_s or 0.0)  # absent: no exponential part, as Burst.expected_count reads it
        mean_gap = gap_s + extra_mean_s
        draw = lambda r, n: gap_s + r.exponential(extra_mean_s, n)  # noqa: E731
    else:
        mean_gap = gap_s
        draw = lambda r, n: np.full(n, gap_s)  # noqa: E731
    mean_count = (end_s - start_s) / mean_gap
    later = _accumulate_gaps(rng, start_s, end_s, mean_count, draw)
    burst_starts = np.concatenate(([start_s], later)) if start_s < end_s else np.empty(0)
    return np.repeat(burst_starts, burst_size)


def interarrival_list(gaps_s: tuple[float, ...], start_s: float, end_s: float) -> np.ndarray:
    times = np.cumsum(np.asarray(gaps_s, dtype=np.float64))
    return times[(times >= start_s) & (times < end_s)]


# -- trace files --------------------------------------------------------------------------------


class ArrivalError(ConfigError):
    """A distribution's input cannot be used; ``key`` is the instance key that names it."""

    key = "distribution"


class TraceError(ArrivalError):
    key = "trace_file"


def _trace_lines(path: str) -> Iterator[str]:
    """The trace's lines, streamed from a bounded read (``faasprof.bounded``: a regular file of at
    most ``MAX_TRACE_FILE_BYTES``); TraceError (with the fix) for a device or FIFO, a file too large,
    a line longer than ``MAX_TRACE_LINE_CHARS`` (more minute columns than any trace has), binary,
    non-UTF-8 text. One pass: memory follows the longest line, not the file."""
    try:
        handle = open_bounded(path, MAX_TRACE_FILE_BYTES, "trace_file")
    except ConfigError as error:
        raise TraceError(str(error)) from None
    number = offset = 0
    with handle:
        while True:
            try:
                raw = handle.readline(MAX_TRACE_LINE_CHARS + 1)
            except OSError as error:
                raise TraceError(f"{path}: cannot read the trace ({error.strerror or error})") from None
            if not raw:
                return
            number += 1
            if len(raw) > MAX_TRACE_LINE_CHARS:
                raise TraceError(
                    f"{path}: line {number} is longer than {MAX_TRACE_LINE_CHARS:,} bytes (a trace has at most "
                    f"{MAX_TRACE_COLUMNS:,} columns); cut the trace to the minutes you need"
                )
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]  # spreadsheets write one; it carries no data
                offset += len(codecs.BOM_UTF8)
            nul = raw.find(b"\0")
            if nul >= 0:
                raise TraceError(
                    f"{path}: is a binary file, not a CSV trace (a NUL byte at offset {offset + nul}); name a CSV of counts or timestamps"
                )
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise TraceError(
                    f"{path}: is not UTF-8 text (byte 0x{raw[error.start]:02x} on line {number}); save the trace as UTF-8 CSV"
                ) from None
            offset += len(raw)


@lru_cache(maxsize=16)
def _read_trace_cached(path: str, mtime_ns: int, row: int | str, start_minute: int) -> tuple[str, np.ndarray]:
    reader = csv.reader(_trace_lines(path))
    try:
        header = next(reader)
    except StopIteration:
        raise TraceError(
            f"{path}: empty trace file; write one count row (Azure layout) or one timestamp per line"
        ) from None
    except csv.Error as error:
        raise TraceError(f"{path}: not a CSV trace ({error}); fix the file") from None
    if len(header) > MAX_TRACE_COLUMNS:
        raise TraceError(
            f"{path}: the header has {len(header):,} columns, more than the {MAX_TRACE_COLUMNS:,} a trace may have; "
            "cut the trace to the minutes you need"
        )
    try:
        if [h.strip() for h in header[:4]] == list(AZURE_KEY_COLUMNS):
            return "counts", _azure_counts(path, header, reader, row, start_minute)
        return "timestamps", _timestamps(path, header, reader)
    except csv.Error as error:
        raise TraceError(f"{path}: not a CSV trace ({error}); fix the file") from None


def _minute_offset(path: str, minute_columns: list[str], start_minute: int) -> int:
    """The position of minute ``start_minute`` among the minute columns. Columns labelled with
    whole minutes are found by their label (a sample of a day, as InVitro writes it, keeps the
    day's labels: 480..959); others count by position from 1."""
    labels = [label.strip() for label in minute_columns]
    if labels and all(label.isdigit() for label in labels):
        numbers = [int(label) for label in labels]
        if start_minute in numbers:
            return numbers.index(start_minute)
        raise TraceError(
            f"{path}: trace_start_minute {start_minute} is not one of its minute columns (labelled {numbers[0]}..{numbers[-1]}); "
            f"give a minute from {numbers[0]} to {numbers[-1]}"
        )
    if start_minute > len(labels):
        raise TraceError(f"{path}: trace_start_minute {start_minute} is past the last minute column ({len(labels)})")
    return start_minute - 1


def _azure_counts(path: str, header: list[str], reader, row: int | str, start_minute: int) -> np.ndarray:
    offset = _minute_offset(path, header[4:], start_minute)
    for index, fields in enumerate(reader):
        if (isinstance(row, int) and index == row) or (isinstance(row, str) and len(fields) > 2 and fields[2] == row):
            values = fields[4:]
            try:
                counts = np.array([int(float(v)) if v.strip() else 0 for v in values], dtype=np.int64)
            except (ValueError, OverflowError) as error:
                raise TraceError(
                    f"{path}: data row {index} has a non-numeric count ({error}); counts are whole numbers"
                ) from None
            if (counts < 0).any():
                raise TraceError(f"{path}: data row {index} has a negative count")
            return counts[offset:]
    what = f"data row {row}" if isinstance(row, int) else f"HashFunction {row}"
    raise TraceError(f"{path}: no {what} in the trace; set trace_row to an existing row index or HashFunction")


def _timestamps(path: str, header: list[str], reader) -> np.ndarray:
    values = array("d")  # 8 bytes a timestamp, not a float object each
    for line_number, fields in enumerate(itertools.chain([header], reader), start=1):
        if not fields or not fields[0].strip() or fields[0].lstrip().startswith("#"):
            continue
        try:
            value = float(fields[0])
            if not math.isfinite(value):
                raise ValueError(fields[0])
            values.append(value)
        except ValueError:
            if line_number == 1:
                continue  # a header such as "timestamp_s"
            raise TraceError(
                f"{path}: line {line_number}: {fields[0]!r} is not a number of seconds; a timestamp trace has one number per line"
            ) from None
    times = np.sort(np.frombuffer(values, dtype=np.float64) if values else np.empty(0))
    if times.size and times[0] < 0:
        raise TraceError(f"{path}: timestamps must be >= 0 (got {times[0]})")
    return times


def read_trace(path: str | os.PathLike, row: int | str = 0, start_minute: int = 1) -> tuple[str, np.ndarray]:
    """``("counts", per-minute counts)`` for the Azure layout, ``("timestamps", seconds)`` otherwise."""
    path = str(path)
    try:
        mtime_ns = os.stat(path).st_mtime_ns
    except OSError as error:
        raise TraceError(f"{path}: cannot read the trace ({error.strerror})") from None
    return _read_trace_cached(path, mtime_ns, row, start_minute)


def trace_counts(
    rng: np.random.Generator,
    counts: np.ndarray,
    start_s: float,
    end_s: float,
    spread: str = "uniform",
    scale: float = 1.0,
) -> np.ndarray:
    """Spread per-minute counts within their minutes; minute 0 starts at ``start_s``."""
    minutes = int(math.ceil((end_s - start_s) / 60.0))
    counts = np.rint(counts[:minutes].astype(np.float64) * scale).astype(np.int64)
    minute_starts = start_s + 60.0 * np.arange(counts.size, dtype=np.float64)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0)
    starts = np.repeat(minute_starts, counts)
    if spread == "equidistant":
        step = np.repeat(60.0 / np.maximum(counts, 1), counts)
        shift = np.repeat(rng.uniform(0.0, 1.0, counts.size), counts)
        within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        times = starts + (within + shift) * step
    else:
        times = np.sort(starts + rng.uniform(0.0, 60.0, total))
        # Sorting the whole array is right: each minute's points stay within their minute.
    return times[times < end_s]


# -- the table of distributions --------------------------------------------------------------


class Distribution(ABC):
    """One arrival process as the workload names it (``distribution``); one instance in the table.

    The hooks take the instance's JSON object (``spec``: checking, scaling) or the resolved
    ``faasprof.workload.spec.Instance`` (``instance``: planning), whose ``arrival_keys`` hold this
    distribution's ``keys`` as given, its file keys resolved to paths (``resolve_files``)."""

    name: str
    keys: tuple[
        str, ...
    ] = ()  # the instance keys only it takes: under another distribution the first one given is refused
    keys_fix = "remove it"  # the fix that refusal names
    required: tuple[str, ...] = ()  # of its keys, those it cannot do without (the schema's if/then requires them too)
    rated = False  # driven by ``rate``: a sweep's ``rate`` sets it, a capacity probe can use it
    # A plug-in's: the JSON Schema of each of its keys, added to the workload schema's instance (the
    # built-ins' stand in schema.json); its settings are then checked by it, here and in ``problems``.
    key_schemas: dict[str, dict] = {}

    def claims(self, spec: dict) -> bool:
        """Whether the instance's keys make it this distribution whatever ``distribution`` says."""
        return False

    def problems(self, spec: dict) -> list[tuple[str, str]]:
        """``(key, problem)`` of its keys beyond what the schema checks, each naming the fix."""
        return []

    @property
    def file_keys(self) -> tuple[str, ...]:
        """Its keys that name a file (``*_file``), which ``resolve_files`` finds."""
        return tuple(key for key in self.keys if key.endswith("_file"))

    def resolve_files(
        self, spec: dict, where: str, base_dir: Path | None, problems: Problems
    ) -> dict[str, Path | None]:
        """Each of its ``file_keys`` that the instance's JSON gives, found where every file of a
        workload is found (``faasprof.workload.references.find_input``: the workload's folder, the
        current one, faasprof's own files) and readable; None, with a problem naming
        ``where.key`` and the fix, for one that is not (a dry run plans without it). The resolved
        instance holds these paths in ``arrival_keys`` in place of the names as given."""
        return {
            key: find_input(spec, key, where, base_dir, problems) for key in self.file_keys if spec.get(key) is not None
        }

    @abstractmethod
    def arrivals(self, instance, rng: np.random.Generator, start_s: float, end_s: float) -> np.ndarray:
        """The instants (seconds since test start) in ``[start_s, end_s)``, a pure function of its arguments."""

    @abstractmethod
    def expected_count(self, instance) -> float:
        """About how many invocations the instance plans (the mean for a random process); ArrivalError
        when an input it names cannot be read."""

    @abstractmethod
    def driving_field(self, instance) -> tuple[str, str]:
        """The key that makes the instance plan many invocations, and how to lower the count."""

    @abstractmethod
    def scale(self, spec: dict, factor: float) -> None:
        """Change the instance's JSON in place so that it sends ``factor`` times as often (a sweep's ``rate_scale``)."""


class _Rated(Distribution):
    """A process driven by ``rate``; at rate 0 the instance is muted (FaaSProfiler plans nothing for it)."""

    required = ("rate",)
    rated = True

    def arrivals(self, instance, rng, start_s, end_s):
        if instance.rate == 0:
            return np.empty(0)
        return self._times(instance, rng, start_s, end_s)

    @abstractmethod
    def _times(self, instance, rng: np.random.Generator, start_s: float, end_s: float) -> np.ndarray: ...

    def expected_count(self, instance):
        # No rate yet: a fraction of a capacity not measured yet (see Workload.with_capacities).
        return 0.0 if instance.rate is None else instance.rate * instance.window_length_s

    def driving_field(self, instance):
        return "rate", "lower the rate or shorten the activity window"

    def scale(self, spec, factor):
        spec["rate"] = spec["rate"] * factor


class Poisson(_Rated):
    name = "Poisson"

    def _times(self, instance, rng, start_s, end_s):
        return poisson(rng, instance.rate, start_s, end_s)


class Uniform(_Rated):
    name = "Uniform"
    keys = ("phase",)

    def _times(self, instance, rng, start_s, end_s):
        return uniform(rng, instance.rate, start_s, end_s, instance.phase)


class Burst(Distribution):
    name = "Burst"
    keys = ("burst_size", "burst_gap_s", "burst_gap_distribution", "burst_gap_mean_s")
    required = ("burst_gap_s",)

    def arrivals(self, instance, rng, start_s, end_s):
        return burst(
            rng,
            instance.burst_size,
            float(instance.burst_gap_s),
            start_s,
            end_s,
            instance.burst_gap_distribution,
            instance.burst_gap_mean_s,
        )

    def expected_count(self, instance):
        gap_s = float(instance.burst_gap_s)
        if instance.burst_gap_distribution == "shifted_exponential":
            gap_s += float(instance.burst_gap_mean_s or 0.0)
        return float(instance.burst_size) * (1.0 + instance.window_length_s / gap_s)

    def driving_field(self, instance):
        if instance.burst_size > 1:
            return "burst_size", "lower burst_size, raise burst_gap_s or shorten the window"
        return "burst_gap_s", "raise burst_gap_s or shorten the window"

    def scale(self, spec, factor):
        spec["burst_gap_s"] = spec["burst_gap_s"] / factor
        if "burst_gap_mean_s" in spec:
            spec["burst_gap_mean_s"] = spec["burst_gap_mean_s"] / factor


class Trace(Distribution):
    """FaaSProfiler's ``interarrivals_list`` (whatever ``distribution`` says), or a ``trace_file``."""

    name = "Trace"
    keys = ("trace_file", *AZURE_LAYOUT_KEYS)
    keys_fix = 'remove it or set distribution to "Trace"'

    def claims(self, spec):
        return spec.get("interarrivals_list") is not None or (
            spec.get("trace_file") is not None and spec.get("distribution") in (None, self.name)
        )

    def problems(self, spec):
        listed, traced = spec.get("interarrivals_list") is not None, spec.get("trace_file") is not None
        if listed and traced:
            return [("trace_file", "give either interarrivals_list or trace_file, not both")]
        if not listed and not traced:
            return [("trace_file", 'required when distribution is "Trace"; add a trace_file or an interarrivals_list')]
        layout = next((key for key in spec if key in AZURE_LAYOUT_KEYS), None)
        if listed and layout is not None:
            return [
                (
                    layout,
                    "only used with a trace_file (an interarrivals_list is sent as given); add a trace_file or remove it",
                )
            ]
        return []

    @staticmethod
    def trace_path(instance) -> Path | None:
        """The instance's trace file as ``resolve_files`` found it; None for a list, or a dry run
        of a workload whose trace file is not there yet."""
        return instance.arrival_keys.get("trace_file")

    def arrivals(self, instance, rng, start_s, end_s):
        if instance.interarrivals_s is not None:
            return interarrival_list(instance.interarrivals_s, start_s, end_s)
        path = self.trace_path(instance)
        if path is None:
            return np.empty(0)
        kind, values = read_trace(path, instance.trace_row, instance.trace_start_minute)
        if kind == "counts":
            return trace_counts(rng, values, start_s, end_s, instance.trace_spread, instance.trace_scale)
        times = start_s + values
        return times[times < end_s]

    def expected_count(self, instance):
        if instance.interarrivals_s is not None:
            return float(len(instance.interarrivals_s))
        path = self.trace_path(instance)
        if path is None:
            return 0.0
        kind, values = read_trace(path, instance.trace_row, instance.trace_start_minute)
        if kind == "counts":
            minutes = int(math.ceil(instance.window_length_s / 60.0))
            return float(values[:minutes].sum()) * instance.trace_scale
        return float(values.size)

    def driving_field(self, instance):
        if instance.interarrivals_s is not None:
            return "interarrivals_list", "shorten the list"
        return "trace_scale", "lower trace_scale or shorten the window"

    def scale(self, spec, factor):
        if spec.get("interarrivals_list") is not None:
            spec["interarrivals_list"] = [gap_s / factor for gap_s in spec["interarrivals_list"]]
        else:
            spec["trace_scale"] = spec.get("trace_scale", 1.0) * factor


BUILTIN_DISTRIBUTIONS: tuple[Distribution, ...] = (Poisson(), Uniform(), Burst(), Trace())
PLUGIN_GROUP = "faasprof.distributions"


def accept_plugin(name: str, loaded: object) -> tuple[Distribution | None, str | None]:
    """A plug-in distribution as ``faasprof.plugins.load_group`` asks: a ``Distribution`` (its class
    is instantiated) named as its entry point, whose keys no instance key of the schema takes, each
    with its JSON Schema."""
    if isinstance(loaded, type) and issubclass(loaded, Distribution):
        loaded = loaded()
    if not isinstance(loaded, Distribution):
        return None, f"{loaded!r} is not a faasprof.workload.arrivals.Distribution (or a subclass of it)"
    if loaded.name != name:
        return None, f"its name is {loaded.name!r}; set name = {name!r} (the entry point's name)"
    if any(d.name == name for d in BUILTIN_DISTRIBUTIONS):
        return None, f"{name!r} is a built-in distribution; give the plug-in another name"
    taken = set(messages.file_schema()["$defs"]["instance"]["properties"])
    clash = sorted(set(loaded.keys) & taken)
    lacking = sorted(set(loaded.keys) - set(loaded.key_schemas))
    if clash:
        return None, f"key(s) {', '.join(clash)} are already instance keys of the workload schema; rename them"
    if lacking:
        return None, f"key_schemas lacks {', '.join(lacking)}; give each of its keys its JSON Schema"
    if not set(loaded.required) <= set(loaded.keys) | {"rate"}:
        return None, "required names a key that is not one of its keys (nor rate)"
    return loaded, None


def distribution_of(spec: dict) -> str | None:
    """The distribution an instance's JSON asks for: the one its keys claim, else ``distribution``."""
    claimed = next((d.name for d in DISTRIBUTIONS.values() if d.claims(spec)), None)
    return claimed or spec.get("distribution")


def distribution_for(name: str | None, where: str = "distribution") -> Distribution:
    """The table's ``name``; ConfigError (one line, prefixed with ``where``) when it holds none."""
    found = DISTRIBUTIONS.get(name) if isinstance(name, str) else None
    if found is None:
        raise ConfigError(f"{where}: {name!r} is no distribution faasprof knows; use one of {', '.join(DISTRIBUTIONS)}")
    return found


def arrival_problems(distribution: str, spec: dict) -> list[tuple[str, str]]:
    """``(key, problem)`` of one instance's JSON under ``distribution``: that distribution's own
    checks, then the first key (in the order given) of each other distribution: one line each."""
    problems = distribution_for(distribution).problems(spec)
    for other in DISTRIBUTIONS.values():
        given = [key for key in spec if key in other.keys]
        if other.name != distribution and given:
            problems.append(
                (given[0], f'only used with distribution "{other.name}" (got "{distribution}"); {other.keys_fix}')
            )
    return problems


def rated_distributions() -> tuple[str, ...]:
    """The names of the distributions driven by ``rate``."""
    return tuple(d.name for d in DISTRIBUTIONS.values() if d.rated)


def arrivals(instance, rng: np.random.Generator) -> np.ndarray:
    """Arrival times in seconds since test start for one resolved ``Instance``."""
    start_s, end_s = instance.window_s
    return distribution_for(instance.distribution, f"instances.{instance.name}.distribution").arrivals(
        instance, rng, start_s, end_s
    )


# -- the table: loaded last, so that a plug-in module importing faasprof finds this one complete --

# The table, in the order the schema's enum and the messages list them: the built-ins, then the plug-ins.
DISTRIBUTIONS: dict[str, Distribution] = {
    d.name: d
    for d in (*BUILTIN_DISTRIBUTIONS, *(plugin.value for plugin in plugins.load_group(PLUGIN_GROUP, accept_plugin)))
}


def plugin_schema_part(schema: dict) -> None:
    """Add the plug-in distributions to the workload schema: each name to ``distribution``'s enum,
    its keys' schemas to the instance's properties, its required keys as an if/then."""
    instance = schema["$defs"]["instance"]
    for distribution in DISTRIBUTIONS.values():
        if distribution in BUILTIN_DISTRIBUTIONS:
            continue
        instance["properties"]["distribution"]["enum"].append(distribution.name)
        instance["properties"].update(distribution.key_schemas)
        if distribution.required:
            condition = {"required": ["distribution"], "properties": {"distribution": {"const": distribution.name}}}
            instance["allOf"].append({"if": condition, "then": {"required": list(distribution.required)}})


messages.add_schema_part(plugin_schema_part)
