"""faasprof-example-plugin: a collector, an arrival process and a metric that faasprof loads from this
installed package through its entry points (``pyproject.toml``; faasprof's docs/plugins.md).

- ``loadavg``: the host's load averages and runnable threads, read from ``/proc/loadavg`` every
  ``interval_ms`` into ``monitors/loadavg/loadavg.csv``; ``faasprof analyze`` plots the 1-minute load.
- ``Sawtooth``: a deterministic arrival process whose rate climbs linearly from
  ``sawtooth_low_rps`` to ``sawtooth_high_rps`` over each ``sawtooth_period_s``, then drops back.
- ``wait_over_platform_latency``: a per-invocation metric, the share of the platform's latency spent
  waiting before the function ran; ``faasprof analyze`` gives its percentiles per phase.
"""
