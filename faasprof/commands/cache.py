"""``faasprof cache [list | clean [--kind KIND]]``: where faasprof's build products are, and emptying them.

Every build product (the catalogue's action zips, its Node.js functions' npm packages, your
functions' staged copies with their virtualenvs, padded copies) goes to one cache outside the
source tree and the installed package (``faasprof.paths.cache_dir``): ``$FAASPROF_CACHE_DIR``, else
``$XDG_CACHE_HOME/faasprof``, else ``~/.cache/faasprof``.

``list`` (the default) prints the cache's folder and, per kind, its size, its number of entries
and what it holds; a folder of another tool in the same cache (the OpenWhisk standalone build of
``setup/openwhisk-standalone``) is listed, never cleaned. ``clean`` removes every kind's entries, or
one kind's with ``--kind``; everything is rebuilt on next use (npm packages: about 20 s).
"""

from __future__ import annotations

import argparse

from faasprof.errors import ConfigError
from faasprof.paths import CACHE_ENV, CACHE_KINDS, cache_root, cache_usage, clean_cache


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=("list", "clean"),
        default="list",
        help="list (default): where the cache is, each kind's size and entries; clean: remove entries",
    )
    parser.add_argument("--kind", choices=tuple(CACHE_KINDS), help="with clean: only this kind (default: every kind)")


def human_bytes(size_bytes: int) -> str:
    """``812 B``, ``3.4 KiB``, ``35.1 MiB``, ``1.2 GiB``."""
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _list() -> int:
    usage = cache_usage()
    total = sum(item.size_bytes for item in usage)
    print(f"cache {cache_root()}: {human_bytes(total)} (set {CACHE_ENV} to move it)")
    for item in usage:
        what = item.what or "not faasprof's build products (faasprof cache clean leaves it)"
        print(f"  {item.kind:<22} {human_bytes(item.size_bytes):>10} {item.entries:>5} entries  {what}")
    return 0


def main(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.kind:
            raise ConfigError(
                "--kind: chooses what clean removes; use faasprof cache clean --kind KIND, or list without --kind"
            )
        return _list()
    removed, freed = clean_cache(args.kind)
    which = f"{args.kind} " if args.kind else ""
    print(f"removed {removed} {which}entries ({human_bytes(freed)}) from {cache_root()}")
    return 0
