#!/usr/bin/env bash
# Stop 71 call B (carry .carry-l71c: this stop's final w4a16_bench_gpu, prefill_bench, prefill_gpu_test): the plan tests
# of the new table entry, the hybrid against f64 at its points (fp16 / bf16 x uint4b8 / uint4, g = 128 and the extra
# groups), and a tune of llama8b.down M = 224 / 256 whose rows now say which reduce mode a split left automatic takes.
# On an H200 also the entry's rows against cuBLAS fp16 (tune of its two tiles, 11 shuffled interleaved rounds).
set -u
. scripts/lib/device-env.sh
S=/tmp/s71b; rm -rf $S; mkdir -p $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xzf ${CARRY:-.carry-l71c}/b.tgz -C $S/b
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 120 $S/b/prefill_gpu_test --gtest_filter='*ClusterEntries*:*PlanCovers*:*SixteenToken*:*LargeMRealShape*' > $OUT/prefill_gpu_test.log 2>&1
log "prefill_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |cluster entry" $OUT/prefill_gpu_test.log
timeout 180 $S/b/w4a16_bench_gpu --registry cuda_hybrid --no-cublas --shapes llama8b.qkv --ms 160,163,164,176,192,256 \
  --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/hybrid.csv > $OUT/hybrid.log 2>&1
log "hybrid rc=$?"
tail -5 $OUT/hybrid.log
tune() {  # name shapes Ms splits configs rounds
  env W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_SPLITS=$4 \
    W4A16_PREFILL_TUNE_CONFIGS=$5 W4A16_PREFILL_INTERLEAVE=$6 timeout 120 $S/b/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  python3 scripts/prefill-ab/il_table.py $S/$1.csv > $OUT/il_$1.txt 2>&1; cp $S/$1.csv $OUT/
  log "$1"
}
tune down llama8b.down 224,256 3,4 20 9
grep "_il," $OUT/down.csv | cut -d, -f1,5,9,10
grep -q H200 $OUT/gpu.txt && tune qkv llama8b.qkv 160,176,192,224,256 2,3 28,34 11
exit 0
