#!/usr/bin/env bash
# Mutation score of the core modules with mutmut 3 (bench/MUTATION.md has the figures).
#
#   bench/mutation.sh COMMIT OUT_DIR GROUP [TIMEOUT_S]
#
# GROUP picks the modules and the fast test files that cover them:
#   schedule  invoker/schedule.py invoker/arrivals.py   ← tests/test_schedule.py (+ pinning tests)
#   analyzer  analyzer/stats.py analyzer/frames.py      ← tests/test_analyzer_{analyze,synthetic,...}.py
# The commit is checked out into a throw-away worktree under OUT_DIR (the working tree here is
# never touched); mutmut runs there with one child (the machine is shared) under `timeout`;
# `mutmut results --all true` is saved to OUT_DIR/results-GROUP.txt.
set -euo pipefail
commit=$1 out=$2 group=$3 limit=${4:-1500}
repo=$(cd "$(dirname "$0")/.." && pwd)
python=$repo/.venv/bin/python
mkdir -p "$out"
tree=$out/tree-$group
[ -d "$tree" ] || git -C "$repo" worktree add --detach "$tree" "$commit" >/dev/null
case $group in
  schedule) sources="invoker/schedule.py invoker/arrivals.py"
            tests=$(cd "$tree" && ls tests/test_schedule.py tests/test_pinning_schedule.py 2>/dev/null || true) ;;
  analyzer) sources="analyzer/stats.py analyzer/frames.py"
            tests=$(cd "$tree" && ls tests/test_analyzer_analyze.py tests/test_analyzer_synthetic.py tests/test_analyzer_outcomes.py tests/test_pinning_analyzer.py 2>/dev/null || true) ;;
  *) echo "unknown group $group (schedule | analyzer)" >&2; exit 2 ;;
esac
{
  echo "[mutmut]"
  echo "source_paths="; for s in $sources; do echo "    $s"; done
  echo "also_copy="; for d in faasprof invoker analyzer localwhisk monitoring functions experiments setup workload_configs; do echo "    $d"; done
  echo "pytest_add_cli_args="; for a in -p no:randomly -p no:cacheprovider -q; do echo "    $a"; done
  echo "pytest_add_cli_args_test_selection="; for t in $tests; do echo "    $t"; done
} > "$tree/setup.cfg"
cd "$tree"
rm -rf mutants
echo "mutating $sources at $(git rev-parse --short HEAD) with $(echo $tests)" | tee "$out/command-$group.txt"
start=$(date +%s)
timeout "$limit" "$python" -m mutmut run --max-children 1 > "$out/run-$group.log" 2>&1 || echo "mutmut run ended with $?" >> "$out/run-$group.log"
echo "wall $(( $(date +%s) - start )) s" >> "$out/command-$group.txt"
"$python" -m mutmut results --all true > "$out/results-$group.txt" 2>&1 || true
for s in $sources; do
  mod=$(echo "${s%.py}" | tr / .)
  printf '%s: ' "$mod"
  grep "^ *$mod\." "$out/results-$group.txt" | awk -F': ' '{n[$2]++; t++} END {printf "total %d", t; for (k in n) printf ", %s %d", k, n[k]; print ""}'
done | tee -a "$out/command-$group.txt"
