#!/usr/bin/env bash
# Device run of a prefill-kernel change that must leave every output bit-identical (issue 5), main
# against a branch, as packed by scripts/prefill-ab/pack.sh into a carry folder. From the repository
# root of a copy of the tree holding that folder:   OUT=/some/dir bash .carry-<name>/run.sh
# Writes $OUT/$PREFILL_AB_NAME.log (summary + A/B table) and $OUT/$PREFILL_AB_NAME.tar.gz (CSVs, logs,
# hashes). Knobs: PREFILL_AB_NAME (default: the carry folder's name), PREFILL_AB_BUDGET_S (150),
# PREFILL_AB_FIRST_TEST (a gtest filter of the branch's new GPU test, run alone first),
# PREFILL_AB_SHAPES (name:N:K,... ; default the four >= 32 MB shapes), PREFILL_AB_MS (default 1024,4096),
# PREFILL_AB_HASH_EXCLUDE (an extended regex: hash lines of configs the branch adds, left out of the
# comparison), PREFILL_AB_TEST_S (the GPU test's timeout, default 90).
# Wall <= the budget: every step under timeout, clamped to what is left of the budget.
#   1. the branch's host tests and prefill_gpu_test (every config vs the f64 reference)
#   2. prefill_dq_ab hash, main's build and the branch's (the same driver source), same W4A16_SEED:
#      every config's output (fp16 / bf16, uint4b8 / uint4, g = 32 / 64 / 128 / 256 / channelwise)
#      must hash the same
#   3. prefill_dq_ab bench, interleaved old new | new old | old new (third round if time is left):
#      8192x8192, llama8b.gate_up, llama8b.down, llama70b.gate_up at M = 1024, 4096, fp16 g = 128,
#      uint4b8 + uint4, default plan, cuBLAS fp16 in the same processes
#   4. ab_table.py: old us / new us / ratio / x cuBLAS per point, geomeans
# Used for branches prefill-dq and prefill-g1 (docs/benchmarks/prefill.md, 2026-12-03 evening).
set -uo pipefail
T0=$(date +%s)
BUDGET=${PREFILL_AB_BUDGET_S:-150}
OUT=${OUT:?OUT must name the output folder}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=${PREFILL_AB_NAME:-$(basename "$HERE" | sed 's/^\.carry-//; s/-/_/g')}
LOG="$OUT/$NAME.log"
: >"$LOG"
. scripts/lib/device-env.sh
. scripts/lib/budget-steps.sh  # left, say, step
unset W4A16_PREFILL_SCHED W4A16_PREFILL_SKIP_XLOAD W4A16_PREFILL_SPLIT_REDUCE W4A16_PREFILL_PDL W4A16_PREFILL_ONE_GROUP
W=$(mktemp -d /tmp/prefill-ab-run.XXXXXX)
if ! tar -xJf "$HERE/bins.tar.xz" -C "$W" 2>>"$LOG"; then
  say "FATAL: cannot unpack $HERE/bins.tar.xz"
  exit 1
fi
say "== $NAME device run $(date -u +%FT%TZ) ($(head -2 "$HERE/BUILD.txt" 2>/dev/null | tr '\n' ' '))"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /' | tee -a "$LOG"

summ() { grep -E '^\[  FAILED|Failure|Expected|tests ran|PASSED|FAILED TEST|SKIPPED' "$W/$1.log" | head -20 >>"$LOG"; }

# 1. tests (the branch's binaries): its new GPU test first (if named), then the rest
step host_test 10 "$W/new/w4a16_test_prefill_host" --gtest_brief=1
rc_host=$?
summ host_test
step dequant_host_test 10 "$W/new/w4a16_test_prefill_dequant_host" --gtest_brief=1
summ dequant_host_test
F=${PREFILL_AB_FIRST_TEST:-}
rc_first=0
if [ -n "$F" ]; then
  step gpu_test_first 30 "$W/new/prefill_gpu_test" --gtest_brief=1 --gtest_filter="$F"
  rc_first=$?
  summ gpu_test_first
fi
step gpu_test "${PREFILL_AB_TEST_S:-90}" "$W/new/prefill_gpu_test" --gtest_brief=1 --gtest_filter="-${F:-none}"
rc_test=$?
summ gpu_test

# 2. bitwise: the same seeded inputs through every config, main's build and the branch's
export W4A16_SEED=20261203
step hash_old 60 "$W/old/prefill_dq_ab" hash
step hash_new 60 "$W/new/prefill_dq_ab" hash
grep '^hash ' "$W/hash_old.log" >"$W/hash_old.txt"
grep '^hash ' "$W/hash_new.log" | { if [ -n "${PREFILL_AB_HASH_EXCLUDE:-}" ]; then grep -vE "$PREFILL_AB_HASH_EXCLUDE"; else cat; fi; } >"$W/hash_new.txt"
grep -h 'prefill_dq_ab' "$W/hash_old.log" "$W/hash_new.log" | head -4 >>"$LOG"
nh=$(wc -l <"$W/hash_new.txt")
nd=$(diff "$W/hash_old.txt" "$W/hash_new.txt" | grep -c '^[<>]')
no=$(wc -l <"$W/hash_old.txt")
if ((nh > 0 && no == nh && nd == 0)); then same=yes; else same=NO; fi
say "outputs bit-identical to main (hash lines old $no, new $nh, differing $nd): $same"
for g in 32 64 128 256 -1; do echo "  g=$g: $(grep -c " g=$g " "$W/hash_new.txt") lines"; done | tr '\n' ' ' | tee -a "$LOG"
echo | tee -a "$LOG"
diff "$W/hash_old.txt" "$W/hash_new.txt" | head -10 >>"$LOG"

# 3. A/B timings, interleaved; each process times every point (~17 s measured for prefill-dq)
SHAPES=${PREFILL_AB_SHAPES:-8192x8192:8192:8192,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,llama70b.gate_up:57344:8192}
MS=${PREFILL_AB_MS:-1024,4096}
mkdir -p "$W/ab"
r=0
dur=0  # the longest bench process so far: a round runs only if both of its processes fit
for pair in "old new" "new old" "old new"; do
  r=$((r + 1))
  if ((r > 1 && $(left) < 2 * dur + 8)); then say "round $r: skipped (budget left $(left) s, a bench run takes ~$dur s)"; break; fi
  for b in $pair; do
    s0=$(date +%s)
    step "bench_${b}_$r" 45 "$W/$b/prefill_dq_ab" bench "$W/ab/bench_${b}_$r.csv" "$SHAPES" "$MS" uint4b8,uint4
    (($(date +%s) - s0 > dur)) && dur=$(($(date +%s) - s0))
    grep -iE 'error|what|prefill_dq_ab' "$W/bench_${b}_$r.log" | head -3 >>"$LOG"
  done
done
say "--- A/B (old = main's kernels, new = the branch ($NAME); median over rounds; x = cuBLAS us / kernel us)"
python3 "$HERE/ab_table.py" "$W/ab" 2>&1 | tee -a "$LOG"
say "verdict inputs: host_test rc=$rc_host, first gpu test rc=$rc_first, other gpu tests rc=$rc_test (0 = all passed; 124 = cut by its timeout), outputs bit-identical: $same, table above"
say "total wall $(($(date +%s) - T0)) s"
cp "$LOG" "$W/"
tar -czf "$OUT/$NAME.tar.gz" -C "$W" ab hash_old.txt hash_new.txt $(cd "$W" && ls *.log) 2>/dev/null
rm -rf "$W"
