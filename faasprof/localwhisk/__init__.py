"""localwhisk: an embedded, single-machine stand-in for Apache OpenWhisk.

It serves OpenWhisk's REST API (``/api/v1/namespaces/...``) and reproduces the classic OpenWhisk
invoker's container pool with real processes: memory-slot accounting, warm reuse, cold starts,
pause after a grace period, idle removal, LRU eviction and a FIFO run buffer. A "container" is a
process group running a language launcher, in its own cgroup where cgroups are writable.

Entry points: ``python -m faasprof.localwhisk serve`` (the server process), ``faasprof.localwhisk.embedded``
(start it from Python and get a handle) and ``faasprof local start|stop|status``.
"""

__all__ = ["__version__"]

from faasprof.version import __version__
