"""faasprof: an on-premise FaaS profiling testbed around Apache OpenWhisk.

This package holds what every other part shares: the CLI dispatcher, the run-directory format,
typed errors with their exit codes, and the project's paths.
"""

__version__ = "0.1.0"
