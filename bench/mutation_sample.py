"""A seeded random sample of mutmut's mutants of faasprof/localwhisk/pool.py and the REST API (server.py, api_*.py),
each applied alone to a copy of the repository and run against the localwhisk API tests (figures: MUTATION-localwhisk.md).

A full mutmut run (about 1850 mutants, each needing a real server) takes hours on the development
VM; a fixed sample, the same ids before and after a change of the tests, gives a comparable score.

    pip install mutmut==2.5.1          # not a faasprof dependency
    git archive HEAD | tar -x -C /tmp/mm && cd /tmp/mm
    mutmut run --paths-to-mutate faasprof/localwhisk/pool.py,faasprof/localwhisk/server.py,faasprof/localwhisk/api_base.py,faasprof/localwhisk/api_entities.py,faasprof/localwhisk/api_invoke.py,faasprof/localwhisk/api_web.py,faasprof/localwhisk/api_activations.py   # interrupt once "2. Checking mutants" shows: the cache has the ids
    python bench/mutation_sample.py /tmp/mm --sample 60 --seed 12 --out sample.json [--pytest-args "-k ..."]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

MUTATED = (
    "faasprof/localwhisk/pool.py",
    "faasprof/localwhisk/server.py",
    "faasprof/localwhisk/api_base.py",
    "faasprof/localwhisk/api_entities.py",
    "faasprof/localwhisk/api_invoke.py",
    "faasprof/localwhisk/api_web.py",
    "faasprof/localwhisk/api_activations.py",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("copy", type=Path, help="a copy of the repository holding mutmut's .mutmut-cache")
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, e.g. a -k selection")
    args = parser.parse_args()
    ids = [row[0] for row in sqlite3.connect(args.copy / ".mutmut-cache").execute("SELECT id FROM Mutant ORDER BY id")]
    sample = sorted(random.Random(args.seed).sample(ids, args.sample))
    pristine = {name: (args.copy / name).read_text() for name in MUTATED}
    results = []
    try:
        for mutant_id in sample:
            applied = subprocess.run(
                [sys.executable, "-m", "mutmut", "apply", str(mutant_id)], cwd=args.copy, capture_output=True, text=True
            )
            changed = [name for name, text in pristine.items() if (args.copy / name).read_text() != text]
            if applied.returncode != 0 or not changed:
                results.append({"id": mutant_id, "status": "not-applied"})
                continue
            began = time.monotonic()
            run = subprocess.run(
                f"{sys.executable} -m pytest -x -q -p no:randomly -p no:cacheprovider tests/test_localwhisk_api.py {args.pytest_args}",
                shell=True,
                cwd=args.copy,
                capture_output=True,
                text=True,
                timeout=300,
            )
            results.append(
                {
                    "id": mutant_id,
                    "file": changed[0],
                    "status": "survived" if run.returncode == 0 else "killed",
                    "seconds": round(time.monotonic() - began, 1),
                }
            )
            for name, text in pristine.items():  # back to the original before the next mutant
                (args.copy / name).write_text(text)
            args.out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        for name, text in pristine.items():
            (args.copy / name).write_text(text)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    killed = sum(r["status"] == "killed" for r in results)
    print(f"{killed}/{len(results)} killed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
