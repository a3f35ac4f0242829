#!/usr/bin/env bash
# Stop 67 call B (carries .carry-l64 = main's prefill_bench / prefill_gpu_test, .carry-l67 = main c3365b9's other GPU
# test binaries and the w4a16 CLI, stripped, xz):
#  1. on an H200 only: stop 63's call N (the tile-39 A/B, issue 5's rows mid M and M >= 1024, the M = 128 / 192 tune);
#  2. on any card, with the time left under BUDGET (default 560 s): every GPU test binary of .carry-l67 at once
#     (decode, the CUDA host checks, registry, prefill host / dequant host, TP on one GPU, the CLI's GPU test).
set -u
. scripts/lib/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/card.txt
if grep -q H200 $OUT/card.txt; then
  CARRY=.carry-l64 bash docs/benchmarks/session_2026-12-06_stop63/callN.sh
  mkdir -p $OUT/callN && mv $OUT/gpu.txt $OUT/il_*.txt $OUT/data.tar.gz $OUT/callN/ 2>/dev/null
fi
T=/tmp/s67t; rm -rf $T; mkdir -p $T && tar -xJf .carry-l67/t.tar.xz -C $T
export W4A16_CLI=$T/w4a16
left=$((${BUDGET:-560} - SECONDS)); echo "tests from ${SECONDS}s, ${left}s left" | tee $OUT/tests.txt
[ $left -gt 60 ] || exit 0
pids=()
for t in $T/w4a16_test_* $T/w4a16_tp_gpu_test; do
  timeout $left $t --gtest_brief=1 > $OUT/t_$(basename $t).log 2>&1 &
  pids+=("$!:$(basename $t)")
done
for p in "${pids[@]}"; do wait ${p%%:*}; echo "${p#*:} rc=$? (${SECONDS}s)" | tee -a $OUT/tests.txt; done
for f in $OUT/t_*.log; do echo "== $(basename $f)"; grep -hE "^\[  (PASSED|FAILED) |FAILED  \]|tests from .* ran|SKIPPED" $f | head -8; done
exit 0
