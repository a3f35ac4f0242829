#!/usr/bin/env bash
# Stop 74 call 2 (carry .carry-l74a: main at the merge of bulk-xtma + the 9..16-token rule, stripped, xz -9:
# w4a16_bench_gpu (N), w4a16_test_gpu_decode, w4a16_test_gpu_registry; and stop 73's main bench as
# w4a16_bench_gpu_main (O: x copied one token row at a time, the old 9..16 default)). Any card.
#  0. smoke: llama8b.down uint4 g = 32 at 16 tokens forced on the streamed bulk kernel (the plan a 1 KB pad had cost),
#     and the default plan at 16 tokens; 30 s bound each
#  1. the 10 PERF.md shapes x M = 1, 2, 4, 6, 8, 9, 12, 16 x fp16 / bf16 x uint4b8 / uint4, g = 128, every row
#     against f64: O and N (the default plans) in 2 interleaved rounds; NF (N with the streamed bulk kernel forced) and
#     NS (N with x never streamed by the bulk kernel) in round 1; P (registry cuda_prefill) at 9 / 12 / 16 in round 1:
#     the hybrid's switch points on this card
#  2. decode GPU tests (EveryConfigurationM1To16, ModelShapes: the new default plans at 9..16 tokens; Bulk*; graphs),
#     then O and N's second round, then the registry's model shapes through Linear and its graph tests, as time allows
# At most 8 files come back: gpu.txt, smoke.log, ab.md, t_decode.log, t_registry.log, r.tar.gz.
set -u
. scripts/lib/device-env.sh
S=/tmp/s74; rm -rf $S; mkdir -p $S/b $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l74a/b.tar.xz -C $S/b
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
XS="W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1"
ONE="--shapes llama8b.down --ms 16 --dtypes f16 --scalars uint4 --groups 32 --no-extra-groups --no-cublas --decode-max-m 16"
env $XS timeout 30 $S/b/w4a16_bench_gpu $ONE > $OUT/smoke.log 2>&1; rc=$?; log "smoke forced rc=$rc"
timeout 30 $S/b/w4a16_bench_gpu $ONE >> $OUT/smoke.log 2>&1; rc2=$?; log "smoke default rc=$rc2"
grep cuda_decode $OUT/smoke.log
if [ $rc -ne 0 ] || [ $rc2 -ne 0 ]; then
  timeout 120 $S/b/w4a16_test_gpu_decode --gtest_filter='Decode.Bulk*' > $OUT/t_decode.log 2>&1; log "bulk tests rc=$?"; exit 0
fi
ALL=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
COMMON="--shapes $ALL --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
MS="--ms 1,2,4,6,8,9,12,16"
run_side() {  # side round
  local side=$1 r=$2 B=$S/b/w4a16_bench_gpu E="W4A16_AB_SIDE=$1" X="$MS"
  case $side in O) B=$S/b/w4a16_bench_gpu_main;; NF) E="$XS";; NS) E="W4A16_DECODE_BULK_XSTREAM=0";;
    P) X="--ms 9,12,16 --registry cuda_prefill --decode-max-m 0";; esac
  env $E timeout 100 $B $COMMON $X --csv $S/r/${side}_$r.csv > $S/r/${side}_$r.log 2>&1; log "$side $r rc=$? $(tail -1 $S/r/${side}_$r.log)"
}
compare() {
  rm -f $OUT/ab.md
  for pair in "O N" "N NF" "NS N"; do
    set -- $pair
    echo "### old: $1, new: $2" >> $OUT/ab.md
    python3 bench/gpu/ab_compare.py $(ls $S/r/$1_*.csv | paste -sd,) $(ls $S/r/$2_*.csv | paste -sd,) >> $OUT/ab.md 2>&1
  done
  tar -czf $OUT/r.tar.gz -C $S r
}
for side in O N NF NS P; do run_side $side 1; done
compare
# the default plans at 9..16 tokens through every configuration; the streamed bulk kernel's own tests
timeout 150 $S/b/w4a16_test_gpu_decode --gtest_filter='Decode.EveryConfigurationM1To16:Decode.BulkStreamedX:Decode.BulkEveryConfigurationM1To16:Decode.GraphCaptureReplay' \
  > $OUT/t_decode.log 2>&1; log "decode tests rc=$?"
grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/t_decode.log | head -20
if [ $SECONDS -lt 300 ]; then for side in O N; do run_side $side 2; done; compare; fi
grep -E "^###|rows; old/new" $OUT/ab.md
[ $SECONDS -lt 330 ] && { timeout 100 $S/b/w4a16_test_gpu_registry --gtest_filter='GpuClaims.ModelShapesThroughLinear:GpuGraph.*' > $OUT/t_registry.log 2>&1; log "registry tests rc=$?"; }
grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/t_registry.log 2>/dev/null | head -20
