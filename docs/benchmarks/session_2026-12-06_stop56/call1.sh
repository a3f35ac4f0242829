#!/usr/bin/env bash
# Stop 56 call 1 (carry .carry = main d647884's GPU binaries by pack-gpu's list with XZ_OPT="-9e -T2", less
# w4a16_bench_read / w4a16_tp_gpu_test; .carry-s56t = prefill_gpu_test, prefill_bench, w4a16_test_prefill_host of
# branch prefill-tail-split 98c3ac0):
# (1) gpu-check's test stage on main: every GPU test binary (registry / MoE / decode / CLI with the TMA store and the
#     encode_act_map refactor, which stop 55 never ran), alongside the branch's persistent test and its whole prefill_gpu_test;
# (2) the branch's persistent test under memcheck, its host suite;
# (3) the split tail's interleaved A/B (shuffled, one process per set): config 20 split 1 (split tail) / the default plan with
#     TAIL_SPLIT=0 / cuBLAS fp16; llama8b.qkv M = 1024 (192 tiles: 1 wave + 60, default the row split) added.
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c1; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56t/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
( timeout 60 $S/b/prefill_gpu_test --gtest_filter='*PersistentTileLoop*' > $S/persist.log 2>&1; echo "branch persistent test rc=$?" > $S/persist.rc
  timeout 200 $S/b/prefill_gpu_test --gtest_brief=1 > $S/prefill_gpu_test.log 2>&1; echo "branch prefill_gpu_test rc=$?" > $S/pgt.rc ) &
bp=$!
W4A16_SKIP_SANITIZER=1 W4A16_SKIP_SWEEP=1 W4A16_SKIP_MOE=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_READ=1 W4A16_SKIP_PREFILL_IL=1 \
  W4A16_TEST_TIMEOUT=200 OUT=$S/gc bash scripts/gpu-check > /dev/null 2>&1
grep -E "PASS|FAIL|PASSED|FAILED|done" $S/gc/gpu-check.log | tee -a $OUT/gpu.txt
wait $bp; cat $S/persist.rc $S/pgt.rc | tee -a $OUT/gpu.txt
grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $S/persist.log $S/prefill_gpu_test.log | head -20 | tee -a $OUT/gpu.txt
echo "tests done (${SECONDS}s)" | tee -a $OUT/gpu.txt
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $S/b/prefill_gpu_test --gtest_brief=1 \
  --gtest_filter='PrefillGpu.PersistentTileLoopMatchesThePlainGridBitwise' > $S/memcheck.log 2>&1
echo "branch memcheck rc=$? $(tail -1 $S/memcheck.log)" | tee -a $OUT/gpu.txt
$S/b/w4a16_test_prefill_host --gtest_brief=1 > $S/host.log 2>&1; echo "branch host rc=$?" | tee -a $OUT/gpu.txt
for sm in "llama70b.gate_up:256,2048" "llama8b.gate_up,8192x8192:4096" "llama8b.qkv:1024"; do
  W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_INTERLEAVE=30 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TAIL_SPLIT=0" \
    timeout 110 $S/b/prefill_bench $S/ab_${sm%%:*}.csv tune_tma > $S/ab_${sm%%:*}.log 2>&1 || echo "rc=$? $sm" | tee -a $OUT/gpu.txt
  echo "A/B $sm (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/ab_*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
