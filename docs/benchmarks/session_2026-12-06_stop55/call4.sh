#!/usr/bin/env bash
# Stop 55 call 4 (carry .carry-s55d: prefill_bench and prefill_gpu_test of the working tree after call 3): (1) the
# persistent tile loop's test under compute-sanitizer memcheck; (2) the loop at mid M, where the plan's bm256 tile has
# more tiles than SMs (M = 256 / 512 on the large layers; M = 128 a control where other tiles are planned): the
# default (persistent where it applies) against W4A16_PREFILL_PERSIST=0 and cuBLAS fp16, shuffled interleaved rounds,
# 2 processes.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c4; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s55d/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $S/b/prefill_gpu_test --gtest_brief=1 \
  --gtest_filter='PrefillGpu.PersistentTileLoopMatchesThePlainGridBitwise' > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt; tail -3 $OUT/memcheck.log
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=${SHAPES:-llama8b.gate_up,llama70b.gate_up,8192x8192,llama8b.down,llama8b.qkv,llama8b.o} \
  W4A16_PREFILL_TUNE_MS=${MS:-128,256,512} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_INTERLEAVE=${IL:-40} W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_PERSIST=0" \
    timeout 150 $S/b/prefill_bench $S/ab_r$r.csv tune_tma > $S/ab_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
grep -h "^cuda_prefill_il," $S/ab_r1.csv | cut -d, -f2,5,9 > $OUT/plans.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
