"""The platforms faasprof measures, behind one interface (``platforms.base.Platform``).

- ``platforms.openwhisk``: Apache OpenWhisk and the embedded localwhisk (which is one): the REST
  client, the connection (flags, workload, ``~/.wskprops``), action requests, activation records;
  ``platforms.openwhisk_deploy`` packages catalogue and researchers' functions as actions.
- ``platforms.generic``: any HTTP endpoint taking ``POST url`` with JSON (FaaSProfiler's ``generic``).
- ``platforms.registry``: which platform serves a workload instance (by its ``endpoint``).

The invoker, the analyzer, the doctor and the experiments reach a platform only through here.
"""
