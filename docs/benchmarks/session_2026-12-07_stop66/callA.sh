#!/usr/bin/env bash
# Stop 66 call A (carries .carry-l64 = stop 64's prefill_bench / prefill_gpu_test, .carry-l66 = main 896cfb9's MoE GPU
# test binary, stripped, xz). Any card:
#  1. on an H200: stop 63's call N (the tile-39 A/B, issue 5's rows mid + large, the M = 128 / 192 tune; ~260 s);
#  2. the whole MoE GPU test binary (commit 896cfb9 moved its remaining knobs onto test::ScopedEnv; not run before).
set -u
. scripts/lib/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/card.txt
if grep -q H200 $OUT/card.txt; then
  CARRY=.carry-l64 bash docs/benchmarks/session_2026-12-06_stop63/callN.sh
  mkdir -p $OUT/callN && mv $OUT/gpu.txt $OUT/il_*.txt $OUT/data.tar.gz $OUT/callN/ 2>/dev/null
fi
T=/tmp/s66m; rm -rf $T; mkdir -p $T
tar -xJf .carry-l66/m.tar.xz -C $T
left=$((${BUDGET:-560} - SECONDS)); echo "MoE tests from ${SECONDS}s, ${left}s left" | tee $OUT/tests66.txt
[ $left -gt 40 ] && { timeout $left $T/w4a16_test_gpu_moe > $OUT/t_moe.log 2>&1; echo "moe rc=$? (${SECONDS}s)" | tee -a $OUT/tests66.txt; }
grep -hE "^\[  (PASSED|FAILED) |FAILED  \]|SKIPPED|tests from .* ran" $OUT/t_moe.log | head -20
exit 0
