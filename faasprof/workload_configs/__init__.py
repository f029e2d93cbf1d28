"""Ready workloads and the workload schema (``schema.json``), shipped with faasprof as package data.

Nothing here is code: ``faasprof.paths`` finds these files through the installed package, so an
installed faasprof validates and runs them from any directory.
"""
