"""The workload model: a workload JSON validated into typed instances (``faasprof.workload.spec``), their
arrival processes (``faasprof.workload.arrivals``) and the merged invocation schedule (``faasprof.workload.schedule``).

It sits below the invoker and the analyzer: ``faasprof run`` executes a schedule built here, and
``faasprof analyze`` rebuilds the same schedule from a run's recorded workload without the invoker.
"""
