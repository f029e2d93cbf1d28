"""faasprof: an on-premise FaaS profiling testbed around Apache OpenWhisk.

This package holds what every other part shares: the CLI dispatcher, the run-directory format,
typed errors with their exit codes, and the project's paths.
"""

from faasprof.version import __version__

__all__ = ["__version__"]
