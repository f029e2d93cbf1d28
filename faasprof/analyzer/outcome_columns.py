"""The outcome columns of the invocation frame: each row's final outcome (the HTTP outcome joined
with its activation record, or the answer alone where no record is due) and whether it is a
sample of successful work. Whole columns at once, decided on their few distinct labels; and how
the platform pushed back on the run's calls (``pushback_counts``), decided on the few distinct
(outcome, status, written, error) combinations of the rows that were not accepted.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from faasprof import rundir
from faasprof.errors import FormatError
from faasprof.outcomes import ACCEPTED_HTTP_OUTCOMES, FINAL_OUTCOMES, PUSHBACK_KINDS, pushback_kind
from faasprof.platforms.registry import platform_of_resolved

# HTTP outcomes after which a record, when one exists, still says what happened: the client gave
# up (or a crash cut the answer off) but the platform may have run the activation.
_RECORD_DECIDES_IF_PRESENT = ("timeout", "unanswered")


def _coded(values) -> tuple[np.ndarray, list]:
    """Aligned labels as (codes, labels): categoricals as they are, anything else factorised
    once, so whole columns are decided on a few distinct labels rather than row by row."""
    if isinstance(values, pd.Categorical) or isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        values = pd.Categorical(values)
        return np.asarray(values.codes, dtype=np.int64), list(values.categories)
    codes, labels = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return codes.astype(np.int64), list(labels)


# Where no record is due (``records_due``), the answer itself is the final outcome.
_ANSWER_IS_FINAL = {"ok": "success", "app_error": "application_error"}


def records_due(invocations: pd.DataFrame, manifest: rundir.Manifest) -> bool | np.ndarray:
    """Whether a record is due for each row: never in a native run; else where the row's instance
    is served by a platform that keeps records (``Platform.keeps_records``: OpenWhisk does, a
    generic endpoint does not). A bool when every row is alike, else one per row."""
    if manifest.native_run:
        return False
    keeps = {}
    for name, spec in manifest.instances.items():
        platform = platform_of_resolved(spec or {})
        keeps[name] = platform is None or platform.keeps_records  # an unknown endpoint: as before, records due
    if all(keeps.values()):
        return True
    instance = pd.Categorical(invocations["instance"])
    return np.array([keeps.get(name, True) for name in instance.categories] + [True])[instance.codes]


def final_outcomes(
    http_outcome, record_outcome, has_record: np.ndarray, records_due: bool | np.ndarray = True
) -> pd.Categorical:
    """``faasprof.outcomes.final_outcome`` for whole columns (aligned arrays or categoricals;
    ``record_outcome`` is the record's outcome where ``has_record``). Categories in
    ``FINAL_OUTCOMES`` order. Where ``records_due`` (a bool, or one per row) is False, an
    accepted answer is final instead of being called ``no_record``."""
    has_record = np.asarray(has_record, dtype=bool)
    http_codes, http_labels = _coded(http_outcome)
    record_codes, record_labels = _coded(record_outcome)
    accepted = np.array([label in ACCEPTED_HTTP_OUTCOMES for label in http_labels] + [False])[http_codes]
    decides = np.array([label in _RECORD_DECIDES_IF_PRESENT for label in http_labels] + [False])[http_codes]
    # Each row's final label as an index into one label list: HTTP labels, then record labels, then no_record.
    labels = [*http_labels, None, *record_labels, None, "no_record"]
    index = np.where(http_codes >= 0, http_codes, len(http_labels))
    from_record = has_record & (accepted | decides)
    index[from_record] = (len(http_labels) + 1 + np.where(record_codes >= 0, record_codes, len(record_labels)))[
        from_record
    ]
    due = np.broadcast_to(np.asarray(records_due, dtype=bool), index.shape)
    index[accepted & ~has_record & due] = len(labels) - 1
    if not due.all():
        answered = np.array(
            [
                len(labels) + list(_ANSWER_IS_FINAL).index(label) if label in _ANSWER_IS_FINAL else -1
                for label in http_labels
            ]
            + [-1]
        )[http_codes]
        labels += list(_ANSWER_IS_FINAL.values())
        take = (answered >= 0) & ~due
        index[take] = answered[take]
    used = np.unique(index)
    unknown = {labels[k] for k in used} - set(FINAL_OUTCOMES)
    if unknown:
        raise FormatError(f"final outcome {sorted(map(str, unknown))[0]!r} is not one of {', '.join(FINAL_OUTCOMES)}")
    to_final = np.array(
        [FINAL_OUTCOMES.index(label) if label in FINAL_OUTCOMES else -1 for label in labels], dtype=np.int64
    )
    return pd.Categorical.from_codes(to_final[index], categories=FINAL_OUTCOMES)


def successful_mask(final_outcome, http_outcome, http_status: np.ndarray) -> np.ndarray:
    """The ``successful`` column (module docstring): success, or a blocking 200 without a record."""
    final_codes, final_labels = _coded(final_outcome)
    http_codes, http_labels = _coded(http_outcome)
    is_final = lambda name: np.array([label == name for label in final_labels] + [False])[final_codes]  # noqa: E731
    is_ok = np.array([label == "ok" for label in http_labels] + [False])[http_codes]
    blocking_200 = is_final("no_record") & is_ok & (np.asarray(http_status, dtype="float64") == 200)
    return is_final("success") | blocking_200


def pushback_counts(invocations: pd.DataFrame) -> dict[str, int]:
    """Rows per kind of pushback (``faasprof.outcomes.pushback_kind``), in ``PUSHBACK_KINDS``
    order; kinds that never happened are left out. The same count the invoker keeps as it runs."""
    outcome = invocations["outcome"].astype(object)
    rest = invocations[(outcome != "ok").to_numpy()]
    if not len(rest):
        return {}
    keys = pd.DataFrame(
        {
            "outcome": rest["outcome"].astype(object),
            "status": rest["http_status"].astype("Float64"),
            "written": rest["sent_ns"].notna(),
            "error": rest["error"].astype(object),
        }
    )
    return pushback_counts_of(
        (label, status, written, error, count)
        for (label, status, written, error), count in keys.value_counts(dropna=False, sort=False).items()
    )


def pushback_counts_of(groups: Iterable[tuple[Any, Any, Any, Any, int]]) -> dict[str, int]:
    """``pushback_counts`` from the rows that were not ``ok`` counted per (outcome, HTTP status,
    sent or not, error): how an out-of-core reader gives them (one aggregate)."""
    counts: dict[str, int] = {}
    for label, status, written, error, count in groups:
        kind = pushback_kind(
            str(label),
            None if pd.isna(status) else int(status),
            bool(written),
            error if isinstance(error, str) else None,
        )
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + int(count)
    return {kind: counts[kind] for kind in PUSHBACK_KINDS if kind in counts}
