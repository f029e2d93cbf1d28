"""The names of the files every collector's folder ``monitors/<name>/`` holds besides its raw
output: its command line, the tool's stdout and stderr, and ``meta.json`` (``faasprof.rundir.monitors``).

Standard library only, and no import at all: a remote host's agent writes the same files and is
shipped with this module (``faasprof.monitoring.hosts.ssh.agent_code``), without the rest of
``faasprof.rundir``.
"""

MONITOR_META = "meta.json"  # a collector's anchors (monotonic and wall-clock ns at its start) and layout
MONITOR_COMMAND = "command.txt"  # the tool's command line, or what a sampling collector reads
MONITOR_STDOUT = "stdout.log"  # the tool's standard output
MONITOR_STDERR = "stderr.log"  # the tool's standard error: why it failed, when it did
