"""The ``wait_over_platform_latency`` metric: the share of the platform's latency an invocation spent
waiting before its function ran (``wait_ms / platform_latency_ms``; NaN without a record).
``faasprof analyze`` adds it to the invocation frame and gives its percentiles per phase."""

from __future__ import annotations

import pandas as pd

from faasprof.analyzer.metrics import Metric


def wait_share(frame: pd.DataFrame) -> pd.Series:
    return frame["wait_ms"] / frame["platform_latency_ms"]


WAIT_SHARE = Metric(
    "wait_over_platform_latency", "The share of the platform's latency an invocation waited before it ran.", wait_share
)
