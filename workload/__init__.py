"""The workload model: a workload JSON validated into typed instances (``workload.spec``), their
arrival processes (``workload.arrivals``) and the merged invocation schedule (``workload.schedule``).

It sits below the invoker and the analyzer: ``faasprof run`` executes a schedule built here, and
``faasprof analyze`` rebuilds the same schedule from a run's recorded workload without the invoker.
"""
