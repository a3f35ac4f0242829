#!/usr/bin/env bash
# Stop 62 call J: stop 61's calls H and I in one call (the device starts failed for 40 minutes, so one start has to
# carry both), the most needed first.
#   .carry-w61 = branch prefill-bm64-1wg (main's table + the one-warpgroup 64-token tiles 39 / 40): prefill_bench,
#                prefill_gpu_test;  .carry-h61 = main's build (the same table): w4a16_bench_gpu.
#  1. the whole prefill_gpu_test of the branch (every config x split against the f64 reference, tiles 39 / 40 included;
#     PlanCoversPerfShapes prints the plans the device takes: the llama70b.gate_up M = 33..128 and qwen0.5b.gate_up
#     M = 193..256 entries of stop 61);
#  2. tune_tma, shuffled interleaved with the default plan and cuBLAS fp16 (7 rounds): llama70b.gate_up M = 48 / 64 / 96 /
#     128 over the bm64 (23), 1-warpgroup (39, 40) and 2-CTA bm128_bn128 (32) tiles at splits 1 / 2;
#  3. the same tiles but 32 over five more layers at M = 48 / 64, splits 1..4 (the H200's M = 64 2x target);
#  4. qwen0.5b.gate_up M = 224 / 256 over 32 / 34 (the old plan's tile);
#  5. the hybrid against f64 at the entries' M (w4a16_bench_gpu, fp16 uint4b8);
#  6. (if time is left) llama8b.down both paths at M = 9..16, fp16 and bf16.
set -u
. scripts/lib/device-env.sh
S=/tmp/s62j; rm -rf $S; mkdir -p $S/w $S/h && tar -xJf .carry-w61/b.tar.xz -C $S/w && tar -xJf .carry-h61/b.tar.xz -C $S/h
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
tune() {  # name shapes ms configs splits timeout
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_CONFIGS=$4 \
    W4A16_PREFILL_TUNE_SPLITS=$5 W4A16_PREFILL_INTERLEAVE=7 timeout $6 $S/w/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  python3 scripts/prefill-ab/il_table.py $S/$1.csv > $OUT/il_$1.txt 2>&1; log "tune $1"
}
timeout 240 $S/w/prefill_gpu_test --gtest_brief=1 > $S/test.log 2>&1
log "prefill_gpu_test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/test.log | tr '\n' ' ')"
grep -h "Failure" -A6 $S/test.log | head -30 | tee -a $OUT/gpu.txt
grep -E "plan +(57344x8192|9728x896)" $S/test.log | tee -a $OUT/gpu.txt
tune t70 llama70b.gate_up 48,64,96,128 23,32,39,40 1,2 90
[ $SECONDS -lt 380 ] && tune t64 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o 48,64 23,39,40 1,2,3,4 120
[ $SECONDS -lt 460 ] && tune tq qwen0.5b.gate_up 224,256 32,34 1 30
if [ $SECONDS -lt 480 ]; then
  timeout 40 $S/h/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 33,48,64,65,96,128 --shapes llama70b.gate_up --dtypes f16 \
    --scalars uint4b8 --csv $S/hyb70.csv > /dev/null 2> $S/err.txt || log "rc=$? hyb70"
  timeout 20 $S/h/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 193,224,256 --shapes qwen0.5b.gate_up --dtypes f16 \
    --scalars uint4b8 --csv $S/hybq.csv > /dev/null 2>> $S/err.txt || log "rc=$? hybq"
  log hybrid
fi
if [ $SECONDS -lt 500 ]; then
  timeout 40 $S/h/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 --ms 9,10,11,12,13,14,15,16 \
    --shapes llama8b.down --dtypes f16,bf16 --scalars uint4b8 --csv $S/down916.csv > /dev/null 2>> $S/err.txt || log "rc=$? down916"
  log "down 9..16"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=w --exclude=h .
for f in t70 t64 tq; do [ -f $OUT/il_$f.txt ] && awk '{print $1,$2,$3,$4,$8,$10}' $OUT/il_$f.txt | head -60; done
for f in hyb70 hybq; do [ -f $S/$f.csv ] && grep -h hybrid $S/$f.csv | cut -d, -f2,5,9,13,15; done
