#!/usr/bin/env bash
# Prepared for the next session (carry .carry-r60 = prefill_bench + prefill_gpu_test of branch prefill-next-ring
# 09b4af8 = main + KernelParams::next_ring, stripped, XZ_OPT="-9e -T2"; never run on a GPU): the next item's first tiles
# issued inside the current item's last k iterations where their ring stages free up (K = 4096: tiles 0-1, K = 8192:
# tile 0; none where nkt % 5 is 1 or 2), the others after the epilogue's fence, which then waits only for the early
# copies. Its unrolled k loop is ~500 SASS instructions longer (2003 against 1502 between the first and last HGMMA).
#  A. the whole prefill_gpu_test (the persistent test, now with K = 640 where all three go early, compares the loop's
#     tiles with the split plan's bitwise);
#  B. the M >= 1024 rows, ring on (the branch's default) and W4A16_PREFILL_NEXT_RING=0 as members of one interleaved
#     run, cuBLAS fp16 beside, 11 rounds, 2 processes (run B only if A passes).
set -u
. scripts/lib/device-env.sh
S=/tmp/s60c3; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-r60/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 240 $S/b/prefill_gpu_test --gtest_brief=1 > $S/test.log 2>&1; rc=$?
echo "prefill_gpu_test rc=$rc: $(grep -E '^\[  (PASSED|FAILED) ' $S/test.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/test.log | head -20 | tee -a $OUT/gpu.txt
if [ $rc -eq 0 ]; then
  for r in 1 2; do
    W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up \
      W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
      W4A16_PREFILL_INTERLEAVE_ENV=W4A16_PREFILL_NEXT_RING=0 \
      timeout 150 $S/b/prefill_bench $S/large_r$r.csv tune_tma > $S/large_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
    echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
  done
  python3 scripts/prefill-ab/il_table.py $S/large_r*.csv | tee $OUT/table.txt
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
