#!/usr/bin/env bash
# Mutation score of the core modules with mutmut 3 (bench/MUTATION.md has the figures).
#
#   bench/mutation.sh COMMIT OUT_DIR GROUP [TIMEOUT_S]
#
# GROUP picks the modules and the fast test files that cover them:
#   schedule  faasprof/workload/schedule.py faasprof/workload/arrivals.py   ← tests/test_schedule.py (+ pinning tests)
#   analyzer  faasprof/analyzer/stats.py faasprof/analyzer/frames.py      ← the fast tests of tests/test_analyzer_analyze.py
#             (+ pinning tests); only the functions holding the rules are mutated
# The commit is checked out into a throw-away worktree under OUT_DIR (the working tree here is
# never touched); mutmut runs there with one child (the machine is shared) under `timeout`;
# `mutmut results --all true` is saved to OUT_DIR/results-GROUP.txt. MUTATION_RESUME=1 keeps the
# verdicts of an earlier run in the same OUT_DIR (one cut short by TIMEOUT_S goes on where it
# stopped); MUTATION_ONLY="glob ..." narrows the mutants to run.
set -euo pipefail
commit=$1 out=$2 group=$3 limit=${4:-1500}
repo=$(cd "$(dirname "$0")/.." && pwd)
python=$repo/.venv/bin/python
mkdir -p "$out"
tree=$out/tree-$group
[ -d "$tree" ] || git -C "$repo" worktree add --detach "$tree" "$commit" >/dev/null
case $group in
  schedule) sources="faasprof/workload/schedule.py faasprof/workload/arrivals.py"
            only=""
            tests=$(cd "$tree" && ls tests/test_schedule.py tests/test_pinning_schedule.py 2>/dev/null || true) ;;
  analyzer) sources="faasprof/analyzer/stats.py faasprof/analyzer/frames.py"
            # The rules' functions only, and the analyzer tests that run in seconds: every mutant of
            # a function runs every test that covers it, and a synthetic-run test takes ~1 s.
            only="analyzer.stats.x_decide_mode* analyzer.stats.x_group_stats* analyzer.stats.x_latency_trend* analyzer.stats.x_quantile_ci* analyzer.stats.x__sorted_quantile* analyzer.stats.x_percentile_block* analyzer.stats.x_phases* analyzer.stats.x_assign_phase* analyzer.frames.x_classify_starts* analyzer.frames.x_build_invocation_frame* analyzer.frames.x_cost_totals* analyzer.frames.x_final_outcomes* analyzer.frames.x_successful_mask*"
            tests=""
            for t in test_modes_known_by_construction test_invocation_frame_columns_breakdown_and_cost test_classify_starts_resumed_needs_every_container_idle_past_the_grace test_quantile_confidence_intervals_bracket_the_estimate test_phases_from_activity_windows test_container_state_annotation_decides_the_class_when_present; do
              grep -q "^def $t(" "$tree/tests/test_analyzer_analyze.py" && tests="$tests tests/test_analyzer_analyze.py::$t"
            done
            tests="$tests $(cd "$tree" && ls tests/test_pinning_analyzer.py 2>/dev/null || true)" ;;
  *) echo "unknown group $group (schedule | analyzer)" >&2; exit 2 ;;
esac
{
  echo "[mutmut]"
  echo "source_paths="; for s in $sources; do echo "    $s"; done
  echo "also_copy="; for d in faasprof invoker analyzer localwhisk monitoring functions experiments setup workload_configs; do echo "    $d"; done
  echo "pytest_add_cli_args="; for a in -p no:randomly -p no:cacheprovider -q; do echo "    $a"; done
  echo "pytest_add_cli_args_test_selection="; for t in $tests; do echo "    $t"; done
} > "$tree/setup.cfg"
only=${MUTATION_ONLY:-$only}  # a narrower set of mutant globs, e.g. to finish a run cut by its limit
cd "$tree"
[ -n "${MUTATION_RESUME:-}" ] || rm -rf mutants  # resume: mutmut keeps the verdicts it has
echo "mutating $sources${only:+ (functions: $only)} at $(git rev-parse --short HEAD) with ${tests//$'\n'/ }" | tee "$out/command-$group.txt"
start=$(date +%s)
read -r -a only_globs <<< "$only"  # globs for mutmut, never expanded by the shell
timeout "$limit" "$python" -m mutmut run --max-children 1 "${only_globs[@]}" > "$out/run-$group.log" 2>&1 || echo "mutmut run ended with $?" >> "$out/run-$group.log"
echo "wall $(( $(date +%s) - start )) s" >> "$out/command-$group.txt"
"$python" -m mutmut results --all true > "$out/results-$group.txt" 2>&1 || true
selected=$out/selected-$group.txt
if [ -n "$only" ]; then
  : > "$selected"
  for glob in "${only_globs[@]}"; do grep -F "    ${glob%\*}" "$out/results-$group.txt" >> "$selected" || true; done
else
  cp "$out/results-$group.txt" "$selected"
fi
for s in $sources; do
  mod=$(echo "${s%.py}" | tr / .)
  printf '%s: ' "$mod"
  grep "^ *$mod\." "$selected" | awk -F': ' '{n[$2]++; t++} END {printf "total %d", t; for (k in n) printf ", %s %d", k, n[k]; print ""}'
done | tee -a "$out/command-$group.txt"
