#!/usr/bin/env bash
# Device run of branch prefill-pp (issue 5: the early-issue k-loop orders of the prefill kernel,
# configs 20-25 = SCHED 1 / 2 twins of the planned TMA tiles 12-14).
# From the repository root of a copy of the tree holding .carry-prefill-pp/ (scripts/prefill-pp/pack.sh):
#   OUT=/some/dir bash .carry-prefill-pp/run.sh
# Writes two files: $OUT/prefill_pp.log (test summary + the A/B table) and $OUT/prefill_pp_sched_ab.csv.
# Wall <= ~235 s: every step bounded by timeout, clamped to what is left of the budget.
#   1. prefill_gpu_test, new tests first (the early-issue configs bitwise == their SCHED 0 twins and
#      against the f64 reference; the plan knob; <= 60 s), then every other prefill test (the rest of
#      150 s, but leaving >= 150 s to the bench: a TIMEOUT there cuts old tests, see "last check line")
#   2. prefill_bench <csv> sched_ab (cuBLAS, default plan, SCHED 1, SCHED 2, default again)
#   3. scripts/prefill-pp/sched_ab_table.py on the CSV (copied beside the binaries)
set -uo pipefail
T0=$(date +%s)
BUDGET=${PREFILL_PP_BUDGET_S:-235}
OUT=${OUT:?OUT must name the output folder}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
LOG="$OUT/prefill_pp.log"
CSV="$OUT/prefill_pp_sched_ab.csv"
: >"$LOG"
. scripts/lib/device-env.sh
. scripts/lib/budget-steps.sh  # left, say, step
unset W4A16_PREFILL_SCHED  # "old" = the default plan = SCHED 0 (kDefaultSched)
W=$(mktemp -d /tmp/prefill-pp-run.XXXXXX)
if ! tar -xJf "$HERE/bins.tar.xz" -C "$W" 2>>"$LOG"; then
  say "FATAL: cannot unpack $HERE/bins.tar.xz"
  exit 1
fi
say "== prefill-pp device run $(date -u +%FT%TZ) ($(cat "$HERE/BUILD.txt" 2>/dev/null | head -2 | tr '\n' ' '))"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /' | tee -a "$LOG"

T=$W/prefill_gpu_test
NEW='PrefillGpu.EarlyIssueConfigsMatchTheirTwinsBitwise:PrefillPlan.SchedKnobTakesTheEarlyIssueTwin'
TS=$(date +%s)
step tests_new 60 "$T" --gtest_brief=1 --gtest_filter="$NEW"
rc_new=$?
used=$(($(date +%s) - TS))
# The older tests (the SCHED 0 kernels' SASS is identical to main's; they also run the new configs
# through the generic config / TMA / cluster tests): what is left of 150 s, keeping >= 150 s for the bench.
lim=$((150 - used))
((lim > $(left) - 150)) && lim=$(($(left) - 150))
step tests_rest "$lim" "$T" --gtest_brief=1 --gtest_filter="-$NEW"
rc_rest=$?
for n in tests_new tests_rest; do
  [ -f "$W/$n.log" ] || continue
  say "--- $n (failures, last lines)"
  grep -E '^\[  FAILED|Failure|error|Expected|differ|PASSED|FAILED TEST|tests ran|SKIPPED' "$W/$n.log" | head -40 | tee -a "$LOG" >/dev/null
  tail -4 "$W/$n.log" >>"$LOG"
  grep -c '^early-issue check' "$W/$n.log" | sed 's/^/early-issue checks printed: /' >>"$LOG"
  grep -E '^(early-issue|tma) check' "$W/$n.log" | tail -1 | sed 's/^/last check line: /' >>"$LOG"
done
# The last check line before a hang / crash names the config.
if ((rc_new != 0)); then grep '^early-issue check' "$W/tests_new.log" | tail -2 >>"$LOG"; fi

bl=$(($(left) - 8))
((bl > 200)) && bl=200
step bench "$bl" "$W/prefill_bench" "$CSV" sched_ab
n=$(wc -l <"$CSV" 2>/dev/null || echo 0)
say "bench rows: $((n > 0 ? n - 1 : 0))"
grep -iE 'error|fail|what\(\)' "$W/bench.log" | head -5 >>"$LOG"
say "--- A/B table (old = default plan, SCHED 0; s1 / s2 = the same tile and split, early issue)"
timeout 20 python3 "$HERE/sched_ab_table.py" "$CSV" >>"$LOG" 2>&1 || say "table: python failed (the CSV is in OUT)"
say "== done in $(($(date +%s) - T0)) s"
rm -rf "$W"
