#!/usr/bin/env bash
# Stop 56 call 8 (carry .carry-s56c8: prefill_gpu_test and prefill_bench of branch prefill-tail-chain): the split tail
# where the last wave holds (1/2, 2/3] of the CTAs, three parts each in two rounds summed as a chain (KernelParams::
# tail_chain). (1) the persistent test (its new chained cases bitwise against the split-3 plan); (2) the interleaved A/B
# (default = chained tail, W4A16_PREFILL_TAIL_SPLIT=0, cuBLAS fp16) on llama70b.gate_up M = 1024 and llama8b.gate_up
# M = 2048 (13 waves + 76 each); (3) the whole prefill_gpu_test and the persistent test under memcheck, side by side.
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c8; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56c8/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 90 $S/b/prefill_gpu_test --gtest_filter='*PersistentTileLoop*' > $S/persist.log 2>&1
rc=$?; echo "persistent test rc=$rc (${SECONDS}s)" | tee -a $OUT/gpu.txt
grep -E "a chain|FAILED|Failure|differ" $S/persist.log | head -12 | tee -a $OUT/gpu.txt
if [ $rc -eq 0 ]; then
  for sm in "llama70b.gate_up:1024" "llama8b.gate_up:2048"; do
    W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=16 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TAIL_SPLIT=0" \
      timeout 60 $S/b/prefill_bench $S/ab_${sm%%:*}.csv tune_tma > $S/ab_${sm%%:*}.log 2>&1 || echo "rc=$? $sm" | tee -a $OUT/gpu.txt
  done
  echo "A/B (${SECONDS}s)" | tee -a $OUT/gpu.txt
  python3 scripts/prefill-ab/il_table.py $S/ab_*.csv | tee $OUT/ab_table.txt
fi
timeout 150 $S/b/prefill_gpu_test --gtest_brief=1 > $S/prefill_gpu_test.log 2>&1 &
a=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $S/b/prefill_gpu_test --gtest_brief=1 \
  --gtest_filter='PrefillGpu.PersistentTileLoopMatchesThePlainGridBitwise' > $S/memcheck.log 2>&1
echo "memcheck rc=$? $(grep 'ERROR SUMMARY' $S/memcheck.log)" | tee -a $OUT/gpu.txt
wait $a; echo "prefill_gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' $S/prefill_gpu_test.log | tr '\n' ' ') (${SECONDS}s)" | tee -a $OUT/gpu.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
