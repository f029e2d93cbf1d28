"""``faasprof doctor [--workload CONFIG] [--root DIR]``: what this host can measure, and what not.

One line per finding, each with the reason and, when something is missing, the fix: every
registered collector's own check (``faasprof.monitoring.collectors``: perf tool, ``perf_event_paranoid`` and
hardware events; Intel RDT flags, resctrl, CLOSes and cache ways, MBA, pqos; blktrace tools,
debugfs, permission, traceable device; cgroup version and writable controllers; ...), the platform (the configured OpenWhisk and its limits, or the embedded localwhisk),
the CPU's governor, turbo and SMT, where faasprof's cache is and how large it is, and each optional extra of
``./setup.sh`` that is not installed (what needs it, and the command that installs it: a plain ``./setup.sh``
installs none of them), and the plug-ins installed packages add (``faasprof.plugins``: name, kind,
package and version, and each that failed to load, with why).

Exit 0 when everything the workload asks for (its ``monitoring`` collectors, a platform, and the
servers of its ``storage`` block) is available, 3 otherwise. Without ``--workload`` only the platform is required. ``--root`` reads
``/proc`` and ``/sys`` from another tree (tests, or a copy taken on the testbed); tools are then
not run, and hardware support is judged from the tree alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from faasprof import plugins
from faasprof.commands.cache import human_bytes
from faasprof.docker import docker_problem
from faasprof.errors import EXIT_NOT_READY, EXIT_OK, ConfigError, NotReadyError
from faasprof.functions.catalogue import lookup
from faasprof.localwhisk import sandbox_users
from faasprof.monitoring.collectors import COLLECTORS, normalise_block
from faasprof.monitoring.collectors.base import INFO, NO, OK, WARN, Finding
from faasprof.monitoring.host import Root, collect_host, cpu_vendor_kind
from faasprof.paths import CHECKOUT_ROOT, cache_root, cache_usage, find_binary
from faasprof.platforms.base import PlatformError, PlatformUnreachable
from faasprof.platforms.openwhisk.connection import add_connection_arguments, resolve_connection
from faasprof.platforms.openwhisk.platform import OpenWhiskPlatform
from faasprof.platforms.registry import PLATFORMS
from faasprof.workload.arrivals import DISTRIBUTIONS
from faasprof.workload.jsonread import read_workload_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workload", metavar="CONFIG", help="a workload JSON: exit 3 unless what it asks for is available"
    )
    parser.add_argument(
        "--root",
        default="/",
        help="read /proc and /sys under this directory (default /); tools are not run when it is not /",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON instead of lines")
    add_connection_arguments(parser)


def _load_workload(path: str) -> dict:
    # Only the monitoring and platform blocks matter here, so the JSON is read, not validated.
    data = read_workload_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a JSON object (a workload)")
    return data


# -- checks ----------------------------------------------------------------------------------------


def check_cpu(root, host: dict, live: bool, block: dict | None) -> list[Finding]:
    findings = []
    governor = host.get("governor")
    if governor is None:
        findings.append(
            Finding(
                "cpu", INFO, "no cpufreq (a VM, or a driver without governors): frequency not controlled by this host"
            )
        )
    elif governor == "performance":
        findings.append(Finding("cpu", OK, "governor performance"))
    else:
        findings.append(
            Finding(
                "cpu", WARN, f"governor {governor}: frequency varies with load", "cpupower frequency-set -g performance"
            )
        )
    turbo = host.get("turbo")
    if turbo is True:
        if cpu_vendor_kind(host) == "amd":
            fix = "echo 0 > /sys/devices/system/cpu/cpufreq/boost (AMD Core Performance Boost)"
        else:
            # Setting the governor resets intel_pstate's no_turbo, so the fix order matters.
            fix = "after setting the governor: echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (or 0 > cpufreq/boost)"
        findings.append(Finding("cpu", WARN, "turbo boost on: clock speed depends on temperature and load", fix))
    elif turbo is False:
        findings.append(Finding("cpu", OK, "turbo boost off"))
    smt = host.get("smt")
    if smt == "on" or host.get("smt_active"):
        findings.append(
            Finding(
                "cpu",
                WARN,
                "SMT on: sibling threads share caches and ports",
                "pin functions to whole cores, or echo off > /sys/devices/system/cpu/smt/control",
            )
        )
    else:
        findings.append(Finding("cpu", INFO, SMT_STATES.get(smt, f"SMT {smt}")))
    findings.append(
        Finding(
            "cpu",
            INFO,
            f"{host.get('cpu_model')}: {host.get('logical_cpus')} CPUs, {host.get('physical_cores')} cores, {host.get('sockets')} socket(s); kernel {host.get('kernel')}",
        )
    )
    findings += check_core_sharing(host)
    return findings


# The kernel's /sys/devices/system/cpu/smt/control values (None: no such file), in words.
SMT_STATES = {
    "off": "SMT off",
    "forceoff": "SMT off (forced at boot)",
    "notsupported": "SMT not supported by this CPU",
    "notimplemented": "SMT control not implemented by this kernel",
    None: "SMT unknown (no /sys/devices/system/cpu/smt/control)",
}

# With this few CPUs the invoker, the platform and the functions cannot be kept apart.
FEW_CPUS = 4


def check_core_sharing(host: dict) -> list[Finding]:
    """A warning when the invoker, the platform and the functions must share a few CPUs."""
    cpus = host.get("logical_cpus")
    if not isinstance(cpus, int) or cpus > FEW_CPUS:
        return []
    return [
        Finding(
            "cpu",
            WARN,
            f"only {cpus} CPUs: the invoker, the platform and the functions share them, so latencies and capacities include "
            "their contention (the invoker falls behind schedule, the functions queue behind the platform)",
            'measure relative to capacity (rate {"capacity_fraction": F}) so results stay comparable on this host; keep other load '
            "off it; for absolute figures use a host with more cores, and cap the functions with a CPU quota so the invoker keeps the rest "
            '(`faasprof local start --cpu-policy quota --user-cpus N`, or "cpu_policy": "quota", "user_cpus": N in the workload\'s '
            "platform.localwhisk block)",
        )
    ]


def check_platform(args: argparse.Namespace, workload: dict | None) -> list[Finding]:
    platform_block = (workload or {}).get("platform") or {}
    connection = resolve_connection(args, platform_block, origin=getattr(args, "workload", None) or "workload")
    if connection is None:
        try:
            found = importlib.util.find_spec("faasprof.localwhisk.embedded") is not None
        except ModuleNotFoundError:
            found = False
        if found:
            return [Finding("platform", OK, "no API host configured: the embedded localwhisk will be used")]
        return [
            Finding(
                "platform",
                NO,
                "no API host configured and the embedded localwhisk is not installed",
                "pass --apihost/--auth (or ~/.wskprops), or reinstall faasprof "
                + ("with ./setup.sh" if CHECKOUT_ROOT is not None else "(pip install --force-reinstall faasprof)"),
                ("platform",),
            )
        ]
    url = connection.apihost + "/api/v1"
    try:
        openwhisk = OpenWhiskPlatform(connection)  # its client, which the base class has not
        with openwhisk:
            info = openwhisk.client.api_info(timeout_s=5.0)
    except PlatformError as error:
        return [
            Finding(
                "platform",
                NO,
                f"{url} answered HTTP {error.status}",
                "check --apihost and that OpenWhisk's controller is up",
                ("platform",),
            )
        ]
    except PlatformUnreachable as error:
        return [
            Finding(
                "platform",
                NO,
                f"{url} unreachable ({error.reason})",
                "start OpenWhisk (or check --apihost / ~/.wskprops), or drop them to use the embedded localwhisk",
                ("platform",),
            )
        ]
    except NotReadyError as error:
        return [Finding("platform", NO, str(error), "check --apihost, --auth and ~/.wskprops", ("platform",))]
    limits = info.get("limits") or {}
    text = f"OpenWhisk at {connection.apihost} ({connection.source})"
    if limits:
        text += "; limits: " + ", ".join(f"{key}={value}" for key, value in sorted(limits.items()))
    return [Finding("platform", OK, text)]


def check_docker(workload: dict | None, problem: str | None) -> list[Finding]:
    """localwhisk's isolation docker: MISSING when the workload asks for it and Docker cannot run it
    (``problem``: why it cannot, from ``faasprof.docker.docker_problem``)."""
    local = ((workload or {}).get("platform") or {}).get("localwhisk") or {}
    if problem is None:
        return [Finding("docker", OK, "localwhisk isolation docker available (daemon answers, runtime images present)")]
    if local.get("isolation") == "docker":
        return [Finding("docker", NO, f"isolation docker asked for: {problem}", None, ("platform",))]
    return [Finding("docker", INFO, f"localwhisk isolation docker unavailable: {problem}")]


def check_sandboxes(workload: dict | None, is_root: bool | None = None) -> list[Finding]:
    """Whom localwhisk's process sandboxes run as (docs/security.md): a user of their own each
    where localwhisk runs as root; else the server's user, with a process limit shared with it.
    A python whose interpreter no sandbox user can reach is refused, never run as root."""
    local = ((workload or {}).get("platform") or {}).get("localwhisk") or {}
    if local.get("isolation") == "docker":
        return []
    if not (sandbox_users.available() if is_root is None else is_root):
        return [Finding("sandbox", WARN, sandbox_users.NOT_ROOT_WARNING)]
    refused = sandbox_users.python_refused(str(local.get("python") or sys.executable))
    if refused:
        return [Finding("sandbox", WARN, refused)]
    return [Finding("sandbox", OK, "localwhisk's process sandboxes run as users of their own (never as root)")]


def check_cache() -> list[Finding]:
    """Where faasprof's build products go and how much they hold (``faasprof cache``)."""
    root = cache_root()
    size = human_bytes(sum(item.size_bytes for item in cache_usage()))
    return [
        Finding(
            "cache",
            INFO,
            f"build products in {root} ({size}); faasprof cache list shows them, faasprof cache clean empties it",
        )
    ]


# The registries that load an entry-point group when imported: these are before check_plugins runs (the
# analyzer's metrics are not: doctor does not import the analyzer, so they are listed as found).
PLUGIN_TABLES = (COLLECTORS, PLATFORMS, DISTRIBUTIONS)


def check_plugins() -> list[Finding]:
    """One line per plug-in the registries took (kind, name, package, version) and per plug-in
    that failed to load (a warning: the built-ins are unaffected, a workload naming it is refused)."""
    findings = [
        Finding("plugins", OK, f"{p.kind} {p.name!r} from {p.package} {p.version} ({p.target})")
        for p in plugins.loaded()
    ]
    findings += [Finding("plugins", WARN, failure.line()) for failure in plugins.failures()]
    findings += [
        Finding("plugins", INFO, f"{p.kind} {p.name!r} from {p.package} {p.version} ({p.target}): loaded by analyze")
        for p in plugins.not_loaded()
    ]
    if not findings:
        findings.append(
            Finding("plugins", INFO, f"no plug-ins installed (entry-point groups {', '.join(plugins.GROUPS)})")
        )
    return findings


# -- the optional extras of ./setup.sh -----------------------------------------------------------


# A binary finder (name -> path or None) and the reason isolation docker cannot run (None: it can).
Finder = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Extra:
    """An optional part of ``./setup.sh --with NAME`` (setup.sh --help lists the same names)."""

    name: str
    needed_by: str
    install_time: str
    missing: Callable[[Finder, "str | None"], list[str]]  # what of it this host lacks
    wheel_fix: str  # how a wheel install (no checkout, so no setup.sh) gets it


def _binaries(*names: str) -> Callable[[Finder, "str | None"], list[str]]:
    return lambda find, _docker: [name for name in names if find(name) is None]


def _node_missing(find: Finder, _docker: str | None) -> list[str]:
    lacking = [] if find("node") else ["node"]
    entry = lookup("img-resize")
    if entry is not None and entry.packaging_missing():
        lacking.append("img-resize's npm packages")
    return lacking


EXTRAS = (
    Extra(
        "node",
        "the Node.js functions (autocomplete, img-resize, ocr-img)",
        "about 30 s",
        _node_missing,
        "sudo apt-get install nodejs npm (faasprof deploy then installs img-resize's npm packages into its cache)",
    ),
    Extra("ocr", "ocr-img", "about 20 s", _binaries("tesseract"), "sudo apt-get install tesseract-ocr"),
    Extra(
        "storage",
        "workloads with a storage block, the I/O studies, io-object and io-net",
        "1 to 5 min: go builds versitygw",
        _binaries("versitygw", "iperf3"),
        "sudo apt-get install iperf3 golang-go && go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 "
        "(into ~/go/bin, where faasprof looks)",
    ),
    Extra(
        "docker",
        "localwhisk's isolation docker (--isolation docker), faasprof slowdown --isolation docker",
        "minutes: Docker and two images",
        lambda _find, docker: [] if docker is None else ["Docker or its runtime images"],
        "sudo apt-get install docker.io; the runtime images are built from a faasprof checkout "
        "(sudo setup/runtime-images/build.sh python nodejs host)",
    ),
    Extra(
        "perf",
        "the perf collector and faasprof mpki",
        "about 20 s",
        _binaries("perf"),
        "sudo apt-get install linux-perf",
    ),
    Extra(
        "bench",
        "bench/bench_invoker.py (nginx as the server)",
        "about 20 s",
        _binaries("nginx"),
        "sudo apt-get install nginx (bench/ is in the checkout only)",
    ),
)
# What a workload's storage block starts, by key: the binary each needs.
STORAGE_SERVERS = {"object_store": "versitygw", "iperf3": "iperf3"}


def _find_binary(name: str) -> str | None:
    # nginx lives in /usr/sbin, which a user's PATH may lack.
    return find_binary(name) or shutil.which(name, path="/usr/sbin:/sbin")


def check_extras(
    workload: dict | None, docker: str | None, find: Finder = _find_binary, checkout: Path | None = CHECKOUT_ROOT
) -> list[Finding]:
    """One line per optional extra: installed, or not (what needs it and the command that installs
    it: ``./setup.sh --with NAME`` in a ``checkout``, the packages' own commands for a wheel install);
    MISSING, failing ``storage``, when the workload's storage block needs a server that is not here.
    ``docker``: why isolation docker cannot run (None: it can)."""
    storage = (workload or {}).get("storage")
    needed = {binary for key, binary in STORAGE_SERVERS.items() if isinstance(storage, dict) and storage.get(key)}
    findings = []
    for extra in EXTRAS:
        lacking = extra.missing(find, docker)
        if not lacking:
            findings.append(Finding("extras", OK, f"{extra.name} installed"))
            continue
        fix = f"./setup.sh --with {extra.name} ({extra.install_time})" if checkout is not None else extra.wheel_fix
        asked = sorted(needed & set(lacking)) if extra.name == "storage" else []
        if asked:
            findings.append(
                Finding(
                    "extras",
                    NO,
                    f"{extra.name}: {', '.join(asked)} not installed, and the workload's storage block starts it",
                    fix,
                    ("storage",),
                )
            )
        else:
            findings.append(
                Finding(
                    "extras",
                    INFO,
                    f"{extra.name} not installed ({', '.join(lacking)} missing), needed by {extra.needed_by}",
                    fix,
                )
            )
    return findings


# -- main ------------------------------------------------------------------------------------------


def run_doctor(args: argparse.Namespace) -> tuple[list[Finding], set[str]]:
    """All findings, and the requirements (collector names, ``platform``) the workload states."""
    root_dir = Path(args.root)
    if not root_dir.is_dir():
        raise ConfigError(f"--root: {root_dir} is not a directory; pass / or a copy of a host's /proc and /sys")
    root = Root(root_dir)
    live = root_dir.resolve() == Path("/")
    workload = _load_workload(args.workload) if args.workload else None
    blocks = normalise_block((workload or {}).get("monitoring"))
    host = collect_host(root_dir)
    findings: list[Finding] = []
    for collector in COLLECTORS:
        findings += collector.doctor(root, host, live, blocks.get(collector.name))
    findings += check_platform(args, workload)
    docker = docker_problem()
    if not any(f.area == "platform" and f.state == OK and "OpenWhisk at" in f.text for f in findings):
        findings += check_docker(workload, docker)
        if live:
            findings += check_sandboxes(workload)
    findings += check_cpu(root, host, live, None)
    findings += check_cache()
    findings += check_plugins()

    findings += check_extras(workload, docker)
    required = set(blocks) | {"platform"} | ({"storage"} if (workload or {}).get("storage") else set())
    return findings, required


def main(args: argparse.Namespace) -> int:
    findings, required = run_doctor(args)
    failing = sorted({req for f in findings if f.state == NO for req in f.blocks if req in required})
    for finding in findings:
        if finding.state == NO and not set(finding.blocks) & required:
            finding.state = "no"  # missing, but nothing asked for it
    if args.json:
        print(
            json.dumps(
                {
                    "findings": [f.__dict__ | {"blocks": list(f.blocks)} for f in findings],
                    "required": sorted(required),
                    "failing": failing,
                },
                indent=2,
            )
        )
    else:
        for finding in findings:
            print(finding.line())
    if failing:
        print(
            f"not ready: {', '.join(failing)} unavailable (asked for by {args.workload or 'any run'})", file=sys.stderr
        )
        return EXIT_NOT_READY
    asked = ", ".join(sorted(required))
    print(f"ready: {asked} available", file=sys.stderr)
    return EXIT_OK
