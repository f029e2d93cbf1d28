"""The platforms faasprof measures, behind one interface (``faasprof.platforms.base.Platform``).

- ``faasprof.platforms.openwhisk``: Apache OpenWhisk and the embedded localwhisk (which is one), a package
  with one module per job: the connection (flags, workload, ``~/.wskprops``), the REST client,
  activation records, deploying actions, and the platform (action requests, responses).
- ``faasprof.platforms.generic``: any HTTP endpoint taking ``POST url`` with JSON (FaaSProfiler's ``generic``).
- ``faasprof.platforms.registry``: the table of platforms (``PLATFORMS``) and which one serves a workload
  instance (by its ``endpoint``).

The workload model (the shape of an instance), the invoker, the analyzer, the doctor and the
experiments reach a platform only through here.
"""
