#!/usr/bin/env bash
# Stop 61 call H (carry .carry-h61 = this stop's build with the llama70b.gate_up M = 33..128 split-2 entries and the
# qwen0.5b.gate_up M = 193..256 2-CTA bm128_bn128 entry: prefill_bench, prefill_gpu_test, w4a16_bench_gpu; stripped):
#  1. the plans the device takes (PrefillGpu.PlanCoversPerfShapes prints them) and the cluster / plan tests;
#  2. the default plan against the entries' old plans and cuBLAS fp16, shuffled interleaved (7 rounds): llama70b.gate_up
#     M = 48 / 64 / 96 / 128 at splits 1 / 2 of the bm64 / bm128_bn128 tiles, qwen0.5b.gate_up M = 224 / 256 at the
#     bm128_bn128 and bm128_bn192 tiles;
#  3. the hybrid at those M against f64 (w4a16_bench_gpu, fp16 uint4b8);
#  4. (if time is left) llama8b.down uint4b8 on both paths at M = 9..16 (the hybrid's switch: decode up to 16, its
#     prefill ran 1.07-1.09x ahead at M = 16 on this stop's H200), fp16 and bf16;
#  5. (if time is left, an H200 only) tune_tma of every tile and split at M = 96 / 128 / 192 / 256 on the layers that
#     ran below cuBLAS fp16 there (llama8b.qkv / o / down, qwen0.5b.gate_up / qkv; llama70b.gate_up M = 256, 0.94 there,
#     runs the row split of stop 58 and is left to a tune of its own).
set -u
. scripts/lib/device-env.sh
S=/tmp/s61h; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-h61/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 60 $S/b/prefill_gpu_test --gtest_filter='*PlanCoversPerfShapes*:*SixteenToken*:*ClusterSplitReduce*:*AutomaticReduce*' > $S/t.log 2>&1
log "prefill_gpu_test (plans) rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/t.log | tr '\n' ' ')"
grep -E "plan +(57344x8192|9728x896)" $S/t.log | tee -a $OUT/gpu.txt
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=48,64,96,128 W4A16_PREFILL_TUNE_CONFIGS=23,32 \
  W4A16_PREFILL_TUNE_SPLITS=1,2 W4A16_PREFILL_INTERLEAVE=7 timeout 60 $S/b/prefill_bench $S/t70.csv tune_tma > $S/t70.log 2>&1 || log "rc=$? t70"
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=qwen0.5b.gate_up W4A16_PREFILL_TUNE_MS=224,256 W4A16_PREFILL_TUNE_CONFIGS=32,34 \
  W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=7 timeout 40 $S/b/prefill_bench $S/tq.csv tune_tma > $S/tq.log 2>&1 || log "rc=$? tq"
log tunes
for f in t70 tq; do python3 scripts/prefill-ab/il_table.py $S/$f.csv > $OUT/il_$f.txt 2>&1; done
timeout 60 $S/b/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 33,48,64,65,96,128 --shapes llama70b.gate_up --dtypes f16 \
  --scalars uint4b8 --csv $S/hyb70.csv > /dev/null 2> $S/err.txt || log "rc=$? hyb70"
timeout 30 $S/b/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 193,224,256 --shapes qwen0.5b.gate_up --dtypes f16 \
  --scalars uint4b8 --csv $S/hybq.csv > /dev/null 2>> $S/err.txt || log "rc=$? hybq"
log hybrid
if [ $SECONDS -lt 300 ]; then
  timeout 60 $S/b/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 --ms 9,10,11,12,13,14,15,16 \
    --shapes llama8b.down --dtypes f16,bf16 --scalars uint4b8 --csv $S/down916.csv > /dev/null 2>> $S/err.txt || log "rc=$? down916"
  log "down 9..16"
fi
if grep -q H200 $OUT/gpu.txt && [ $SECONDS -lt 330 ]; then
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama8b.o,llama8b.down,qwen0.5b.gate_up,qwen0.5b.qkv \
    W4A16_PREFILL_TUNE_MS=96,128,192,256 W4A16_PREFILL_INTERLEAVE=7 timeout 200 $S/b/prefill_bench $S/tmid.csv tune_tma > $S/tmid.log 2>&1 || log "rc=$? tmid"
  python3 scripts/prefill-ab/il_table.py $S/tmid.csv > $OUT/il_tmid.txt 2>&1
  log "mid tune"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
cat $OUT/il_t70.txt $OUT/il_tq.txt | awk '{print $1,$2,$3,$4,$8,$10}'; grep -h "hybrid" $S/hyb70.csv $S/hybq.csv | cut -d, -f2,5,9,13,15
