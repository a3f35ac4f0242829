#!/usr/bin/env bash
# Stop 55 call 7 (carry .carry-s55f: prefill_gpu_test, prefill_bench, w4a16_test_prefill_host of branch
# prefill-tma-store): the persistent loop's output tiles stored by TMA (thread 0, the CTA goes on to the next item)
# instead of every thread's 16-byte copies after a second barrier; the output tile now in 64-row panels with the TMA
# 128B swizzle on every stmatrix path. (1) prefill_gpu_test whole (the plain epi16 path reads the new panels too) and
# the persistent test under memcheck, the host suite; (2) the interleaved A/B (shuffled): default (TMA store) against
# W4A16_PREFILL_TMA_STORE=0, W4A16_PREFILL_PERSIST=0 and cuBLAS fp16, 2 processes.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c7; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s55f/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 $S/b/prefill_gpu_test --gtest_filter='*PersistentTileLoop*' > $OUT/persist.log 2>&1
rc=$?; echo "persistent test rc=$rc (${SECONDS}s)" | tee -a $OUT/gpu.txt; tail -3 $OUT/persist.log
[ $rc -eq 0 ] || exit 1
timeout 200 $S/b/prefill_gpu_test --gtest_brief=1 > $OUT/prefill_gpu_test.log 2>&1
echo "prefill_gpu_test rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt; tail -3 $OUT/prefill_gpu_test.log
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $S/b/prefill_gpu_test --gtest_brief=1 \
  --gtest_filter='PrefillGpu.PersistentTileLoopMatchesThePlainGridBitwise' > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
$S/b/w4a16_test_prefill_host --gtest_brief=1 > $OUT/host.log 2>&1; echo "host rc=$?" | tee -a $OUT/gpu.txt
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=${SHAPES:-llama8b.gate_up,8192x8192,llama8b.o} W4A16_PREFILL_TUNE_MS=${MS:-1024,2048,4096} \
  W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=${IL:-40} \
  W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TMA_STORE=0;W4A16_PREFILL_PERSIST=0" \
    timeout 120 $S/b/prefill_bench $S/ab_r$r.csv tune_tma > $S/ab_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
