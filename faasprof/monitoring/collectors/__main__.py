"""``python -m faasprof.monitoring.collectors [--write]``: the collector registry's generated documents.

Without ``--write``, prints the ``monitoring`` section of ``faasprof/workload_configs/schema.json`` and the
collector table of docs/monitoring.md; with it, replaces both in place. Then run
``python -m faasprof.invoker.schema_doc --write`` so the workload reference of docs/workloads.md follows the
schema.
"""

from __future__ import annotations

import argparse
import sys

from faasprof.monitoring.collectors import GUIDE, guide_table, replace_guide_table, replace_schema_section, schema_text
from faasprof.paths import CHECKOUT_ROOT, WORKLOAD_SCHEMA_PATH


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m faasprof.monitoring.collectors",
        description=f"Write the registry's schema section and the collector table of {GUIDE}.",
    )
    parser.add_argument(
        "--write", action="store_true", help=f"update faasprof/workload_configs/schema.json and {GUIDE} in place"
    )
    args = parser.parse_args(argv)
    if not args.write:
        sys.stdout.write(schema_text() + "\n\n" + guide_table() + "\n")
        return 0
    if CHECKOUT_ROOT is None:
        parser.error(f"--write updates the schema and {GUIDE} of a source checkout; run it from one (pip install -e .)")
    schema = WORKLOAD_SCHEMA_PATH.read_text(encoding="utf-8")
    WORKLOAD_SCHEMA_PATH.write_text(replace_schema_section(schema), encoding="utf-8")
    guide_path = CHECKOUT_ROOT / GUIDE
    guide_path.write_text(replace_guide_table(guide_path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
