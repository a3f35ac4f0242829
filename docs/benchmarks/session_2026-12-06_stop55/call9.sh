#!/usr/bin/env bash
# Prepared in stop 55 for the next stop (branch prefill-tail-split, not yet run; carry .carry-s55h: prefill_gpu_test,
# prefill_bench, w4a16_test_prefill_host of that branch): the persistent loop's split tail. (1) the persistent test
# (its tail tiles bitwise against the split plan) and the whole prefill_gpu_test, the persistent test under memcheck;
# (2) the interleaved A/B (shuffled) of the default (split tail) against W4A16_PREFILL_TAIL_SPLIT=0 and cuBLAS fp16 where
# the last wave is short: llama70b.gate_up M = 256 (448 tiles: 3 waves + 52) and 2048 (3584: 27 + 20), llama8b.gate_up
# M = 4096 (27 + 20); 8192x8192 M = 4096 (7 + 100: no split) as a control; 2 processes. M = 256 / 2048 plan other tiles or
# split 2 by default: the tune rows (config 20 split 1) carry the split tail there.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c9; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s55h/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 $S/b/prefill_gpu_test --gtest_filter='*PersistentTileLoop*' > $OUT/persist.log 2>&1
rc=$?; echo "persistent test rc=$rc (${SECONDS}s)" | tee -a $OUT/gpu.txt; grep -E "tail|PASSED|FAILED|Failure" $OUT/persist.log | head -20
[ $rc -eq 0 ] || exit 1
timeout 200 $S/b/prefill_gpu_test --gtest_brief=1 > $OUT/prefill_gpu_test.log 2>&1
echo "prefill_gpu_test rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt; tail -3 $OUT/prefill_gpu_test.log
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $S/b/prefill_gpu_test --gtest_brief=1 \
  --gtest_filter='PrefillGpu.PersistentTileLoopMatchesThePlainGridBitwise' > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
$S/b/w4a16_test_prefill_host --gtest_brief=1 > $OUT/host.log 2>&1; echo "host rc=$?" | tee -a $OUT/gpu.txt
for r in 1 2; do
  for sm in "llama70b.gate_up:256,2048" "llama8b.gate_up,8192x8192:4096"; do
    W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
    W4A16_PREFILL_INTERLEAVE=40 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TAIL_SPLIT=0" \
      timeout 120 $S/b/prefill_bench $S/ab_r${r}_${sm%%:*}.csv tune_tma > $S/ab_r${r}_${sm%%:*}.log 2>&1 || echo "rc=$? round $r $sm" | tee -a $OUT/gpu.txt
  done
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
