#!/usr/bin/env bash
# Stop 61 call I (carry .carry-w61 = branch prefill-bm64-1wg dbcfce1's (084c959 adds a comment only) prefill_bench + prefill_gpu_test, stripped):
# the one-warpgroup 64-token tiles (configs 39: 128 rows x 64 tokens, 3 CTAs per SM; 40: 64 x 64, 4 CTAs per SM), built
# in stop 61 and never run. Any card; the H200 is the one the M = 64 target (2x cuBLAS fp16) misses on.
#  1. the whole prefill_gpu_test (every config x split against the f64 reference: the new tiles included);
#  2. tune_tma of the 2-warpgroup bm64 tile (23), the new tiles (39, 40) and the 2-CTA bm128_bn128 (32) at splits
#     1..4 on the >= 32 MB layers and llama8b.qkv / o, M = 48 / 64 / 96 / 128, shuffled interleaved with the default plan
#     and cuBLAS fp16 (7 rounds). Merge the branch if 1 passes, and enter a tile where it beats the plan by > 3%.
set -u
. scripts/lib/device-env.sh
S=/tmp/s61i; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-w61/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 300 $S/b/prefill_gpu_test --gtest_brief=1 > $S/test.log 2>&1
log "prefill_gpu_test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/test.log | tr '\n' ' ')"
grep -h "Failure" -A6 $S/test.log | head -30 | tee -a $OUT/gpu.txt
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama70b.gate_up,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o \
  W4A16_PREFILL_TUNE_MS=48,64,96,128 W4A16_PREFILL_TUNE_CONFIGS=23,39,40,32 W4A16_PREFILL_TUNE_SPLITS=1,2,3,4 \
  W4A16_PREFILL_INTERLEAVE=7 timeout 240 $S/b/prefill_bench $S/t64.csv tune_tma > $S/t64.log 2>&1 || log "rc=$? t64"
log tune
python3 scripts/prefill-ab/il_table.py $S/t64.csv > $OUT/il_t64.txt 2>&1
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
for s in 8192x8192 llama70b.gate_up llama8b.gate_up llama8b.down llama8b.qkv llama8b.o; do for m in 48 64 96 128; do
  grep "^$s *M=$m " $OUT/il_t64.txt | head -3 | awk '{print $1,$2,$3,$4,$8,$10}'; done; done
