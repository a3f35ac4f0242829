#!/usr/bin/env bash
# Stop 65 call S (carries .carry-l64 = stop 64's prefill_bench / prefill_gpu_test, .carry-l65 = this stop's decode and
# MoE GPU test binaries, stripped, xz). Any card:
#  1. stop 64's call R (the plan / cluster tests with the qwen0.5b.qkv M = 225..256 entry and its A/B); on an H200 it
#     goes on with stop 63's call N (the tile-39 A/B, issue 5's rows, the M = 128 / 192 tune);
#  2. the decode and MoE GPU tests whose knobs now go through test::ScopedEnv (commit 3790c43), where time is left.
set -u
. scripts/lib/device-env.sh
bash docs/benchmarks/session_2026-12-07_stop64/callR.sh
T=/tmp/s65t; rm -rf $T; mkdir -p $T
tar -xJf .carry-l65/t.tar.xz -C $T
left=$((480 - SECONDS)); echo "tests from ${SECONDS}s, ${left}s left" | tee $OUT/tests65.txt
if [ $left -gt 60 ]; then
  timeout $((left / 2)) $T/w4a16_test_gpu_decode \
    --gtest_filter='Decode.StreamedX:Decode.ForcedPlans:Decode.PersistentItems:Decode.Rejections:Decode.BulkRejectsBadKnobs' \
    > $OUT/t_decode.log 2>&1; echo "decode rc=$? (${SECONDS}s)" | tee -a $OUT/tests65.txt
  timeout $((480 - SECONDS - 10)) $T/w4a16_test_gpu_moe --gtest_filter='*MoeGpuRing*:*MoeGpu.*' \
    > $OUT/t_moe.log 2>&1; echo "moe rc=$? (${SECONDS}s)" | tee -a $OUT/tests65.txt
  grep -hE "^\[  (PASSED|FAILED) |FAILED  \]|tests from .* ran" $OUT/t_decode.log $OUT/t_moe.log
fi
exit 0
