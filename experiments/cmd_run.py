"""``faasprof run CONFIG``: the invoker's run command, with capacity-fraction rates resolved first.

A workload may give a rate as ``{"capacity_fraction": F}`` (``experiments.capacity_store``):
resolving it may need a capacity search, which runs workloads and analyses them, so it belongs
above the invoker. This module resolves such rates (from the store, else by measuring) and hands
the resolved workload to ``invoker.cmd_run``; everything else is that command's.
"""

from __future__ import annotations

import argparse

from experiments import capacity_store
from invoker import cmd_run as invoker_run
from invoker.connection import resolve_connection
from workload.spec import load_workload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    invoker_run.add_arguments(parser)


def main(args: argparse.Namespace) -> int:
    workload = load_workload(args.config, seed=args.seed)
    if workload.needs_capacity():
        connection = resolve_connection(args, workload.platform, origin=args.config)
        settings = invoker_run.local_settings(args, workload.platform)
        say = None if args.quiet else capacity_store._say
        workload = capacity_store.resolve_workload(workload, connection, settings, args.out, say=say)
    return invoker_run.main(args, workload=workload)
