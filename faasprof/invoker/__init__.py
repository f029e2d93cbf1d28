"""The invoker: executes a workload's schedule open-loop (the dispatcher and its sender), runs a
workload from pre-flight to a finished run directory, and deploys actions. The workload model lives
in ``faasprof/workload/``; the platforms it talks to (OpenWhisk, localwhisk, a generic HTTP endpoint) in
``faasprof/platforms/``."""
