#!/usr/bin/env bash
# Stop 72 call B (carry .carry-l72b: branch bulk-wide's w4a16_bench_gpu + w4a16_test_gpu_decode, stripped): the bulk
# decode kernel's wide variant (16 consumer warps of 2 tiles a stage, W4A16_DECODE_BULK_WARPS=16) at 9..16 tokens.
#  1. the bulk decode GPU tests (the wide variant's every configuration, plans of 1..16 stripes, a model shape, chains);
#  2. decode rows of every PERF.md shape at M = 9 / 12 / 16, fp16 / bf16 x uint4b8 / uint4, three sides interleaved over
#     ROUNDS rounds, every row against f64: D = the default plans (the streaming kernel), B8 = the bulk kernel with x
#     streamed (8 warps), B16 = the same with 16 consumer warps, P = the prefill path (registry cuda_prefill, which the
#     hybrid takes at 9..16 tokens on some layers); bench/gpu/ab_compare.py on the best of each side.
set -u
. scripts/lib/device-env.sh
S=/tmp/s72b; rm -rf $S; mkdir -p $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l72b/g.tar.xz -C $S
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 150 $S/w4a16_test_gpu_decode --gtest_filter='Decode.Bulk*' > $OUT/test_bulk.log 2>&1; log "bulk tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $OUT/test_bulk.log | tail -8
ARGS="--shapes ${SHAPES:-llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down} --ms ${MS:-9,12,16} --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
B8="W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1"
for r in $(seq 1 ${ROUNDS:-2}); do
  [ $r -gt 1 ] && [ $SECONDS -gt ${ROUND_BUDGET:-230} ] && { log "round $r skipped"; break; }
  for side in D B8 B16 P; do
    X=""
    case $side in D) E="W4A16_AB_SIDE=D";; B8) E="$B8";; B16) E="$B8 W4A16_DECODE_BULK_WARPS=16";; P) E="W4A16_AB_SIDE=P"; X="--registry cuda_prefill --decode-max-m 0";; esac
    env $E timeout 90 $S/w4a16_bench_gpu $ARGS $X --csv $S/r/${side}_$r.csv > $S/r/${side}_$r.log 2>&1 || log "rc=$? $side $r"
    tail -1 $S/r/${side}_$r.log
    log "$side $r"
  done
done
# The wide variant on 8 stripes per item (the cost model's tie-break may take 16 stripes on fewer blocks), one round.
if [ $SECONDS -lt ${N8_BUDGET:-330} ]; then
  env $B8 W4A16_DECODE_BULK_WARPS=16 W4A16_DECODE_BULK_PLAN=8,1 timeout 90 $S/w4a16_bench_gpu $ARGS --csv $S/r/B16n8_1.csv > $S/r/B16n8_1.log 2>&1
  log "B16n8"
fi
for pair in "D B16" "B8 B16" "D B8" "B16 B16n8"; do
  set -- $pair
  echo "### old: $1, new: $2" >> $OUT/ab.md
  ls $S/r/$2_*.csv > /dev/null 2>&1 && python3 bench/gpu/ab_compare.py $(ls $S/r/$1_*.csv | paste -sd,) $(ls $S/r/$2_*.csv | paste -sd,) >> $OUT/ab.md 2>&1
done
tar -czf $OUT/r.tar.gz -C $S r
grep -c . $OUT/ab.md
