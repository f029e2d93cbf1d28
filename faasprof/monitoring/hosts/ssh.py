"""How faasprof reaches a host: the ssh command line (plain ssh, BatchMode, the inventory's
settings) and the agent's code sent down its stdin.

The remote command is ``python3 -u -c BOOT``: BOOT reads a length line and that many bytes of
JSON (``{module: [is_package, source]}``: the agent and the standard-library-only modules it
imports), serves those modules from memory through an import hook, and runs the agent on the rest
of stdin. Nothing is written on the host.
"""

from __future__ import annotations

import inspect
import json
import shlex

from faasprof.monitoring import host as host_module
from faasprof.monitoring import sampling, tools
from faasprof.monitoring.hosts import agent, dockerwatch, toolrun
from faasprof.monitoring.hosts.inventory import Host
from faasprof.monitoring.parsers import perf as perf_parser
from faasprof.rundir import monitor_files

CONNECT_TIMEOUT_S = 5
# ssh asks the server every 2 s and gives up after 3 unanswered: a host that vanished without
# closing the connection is lost within about 6 s.
ALIVE_INTERVAL_S, ALIVE_COUNT = 2, 3

BOOT = """import sys,json,importlib.util as u
i=sys.stdin.buffer;S=json.loads(i.read(int(i.readline())))
class L:
 def find_spec(s,n,p,t=None):
  return u.spec_from_loader(n,s,is_package=S[n][0]) if n in S else None
 def create_module(s,spec):return None
 def exec_module(s,m):exec(compile(S[m.__name__][1],'faasprof:'+m.__name__,'exec'),m.__dict__)
sys.meta_path.insert(0,L())
import faasprof.monitoring.hosts.agent as a;a.main(i,sys.stdout)
"""


def ssh_argv(host: Host) -> list[str]:
    """The ssh command running the agent on ``host``. The inventory's common args come first:
    ssh keeps the first value it is given for an option."""
    argv = ["ssh", "-T", *host.common_args]
    for option in (
        "BatchMode=yes",
        f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        f"ServerAliveInterval={ALIVE_INTERVAL_S}",
        f"ServerAliveCountMax={ALIVE_COUNT}",
        "LogLevel=ERROR",
    ):
        argv += ["-o", option]
    argv += ["-p", str(host.port)]
    if host.key_file:
        argv += ["-i", host.key_file, "-o", "IdentitiesOnly=yes"]
    if host.user:
        argv += ["-l", host.user]
    # "--" ends ssh's options: no address, whatever the inventory wrote, is read as one.
    return [*argv, "--", host.address, "python3 -u -c " + shlex.quote(BOOT)]


def agent_code() -> bytes:
    """What precedes the agent's settings on its stdin: the length line and the modules."""
    packages = (
        "faasprof",
        "faasprof.monitoring",
        "faasprof.monitoring.hosts",
        "faasprof.monitoring.parsers",
        "faasprof.rundir",  # only its standard-library module of file names: its __init__ is not shipped
    )
    modules = {package: [True, ""] for package in packages}
    for module in (host_module, sampling, perf_parser, tools, toolrun, dockerwatch, agent, monitor_files):
        modules[module.__name__] = [False, inspect.getsource(module)]
    payload = json.dumps(modules).encode()
    return str(len(payload)).encode() + b"\n" + payload
