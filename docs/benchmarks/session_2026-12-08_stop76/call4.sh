#!/usr/bin/env bash
# Stop 76 call 4 (carry .carry-l76b: main after the cost-xslot merge as w4a16_bench_gpu / w4a16_test_gpu_decode, its
# W4A16_DIAG_BULK_X_ONCE build as w4a16_bench_gpu_xonce, main at
# 4d3c411 as w4a16_bench_gpu_old). Results packed after each step into $OUT/r.tar.gz.
#  1. the decode test of every configuration at M = 1..16 on the default plans of this build
#  2. H200 only: the streamed bulk kernel forced (F) against the default (N), 10 PERF.md shapes x M = 4, 6, 8, 9, 12, 16
#     x fp16 / bf16 x both scalar types, 2 rounds; the prefill path (P) at 9 / 12 / 16: the H200's 4..16-token rule
#  X. both cards: the streamed bulk kernel forced, normal (XF) against the x-once diagnostic build (XO: x copied into the
#     first ring stages only, wrong results by design): what the x stream through L2 costs, 6 layers x M = 4 / 8 / 12 / 16
#  3. qwen0.5b.down 12..16 tokens, this build's default (QN) against 4d3c411's (QO), 2 rounds
#  4. the hybrid through the registry at M = 8 / 9 / 12 / 16 on the four PERF.md layers call 2 did not check
set -u
. scripts/lib/device-env.sh
S=/tmp/s76; rm -rf $S; mkdir -p $S/b $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l76b/b.tar.xz -C $S/b
B=$S/b/w4a16_bench_gpu
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
pack() { tar -czf $OUT/r.tar.gz -C $S r; }
timeout 60 $S/b/w4a16_test_gpu_decode --gtest_filter='Decode.EveryConfigurationM1To16' > $OUT/t_decode.log 2>&1
log "decode tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/t_decode.log | head
ALL=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
A="--shapes $ALL --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
if grep -q H200 $OUT/gpu.txt; then
  for r in 1 2; do
    timeout 60 $B $A --ms 4,6,8,9,12,16 --csv $S/r/H200N_$r.csv > /dev/null 2>&1; log "H200 N $r rc=$?"
    W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1 timeout 60 $B $A --ms 4,6,8,9,12,16 --csv $S/r/H200F_$r.csv > /dev/null 2>&1
    log "H200 F $r rc=$?"; pack
  done
  timeout 60 $B $A --ms 9,12,16 --registry cuda_prefill --decode-max-m 0 --csv $S/r/H200P_1.csv > /dev/null 2>&1
  log "H200 P rc=$?"; pack
fi
X="--shapes 8192x8192,llama8b.down,llama8b.gate_up,llama70b.gate_up,llama8b.o,llama8b.qkv --ms 4,8,12,16 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1 timeout 40 $B $X --csv $S/r/XF_$r.csv > /dev/null 2>&1; log "XF $r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1 timeout 40 $S/b/w4a16_bench_gpu_xonce $X --csv $S/r/XO_$r.csv > $S/r/xo_$r.log 2>&1; log "XO $r rc=$?"
done
pack
Q="--shapes qwen0.5b.down --ms 12,13,14,15,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  timeout 30 $S/b/w4a16_bench_gpu_old $Q --csv $S/r/QO_$r.csv > /dev/null 2>&1; log "QO $r rc=$?"
  timeout 30 $B $Q --csv $S/r/QN_$r.csv > /dev/null 2>&1; log "QN $r rc=$?"
done
pack
timeout 120 $B --registry cuda_hybrid,cuda_decode,cuda_prefill --no-cublas --decode-max-m 0 \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.down,llama8b.gate_up --ms 8,9,12,16 --dtypes f16,bf16 \
  --scalars uint4b8,uint4 --no-extra-groups --csv $S/r/hybrid.csv > $S/r/h.log 2>&1; log "hybrid rc=$?"; pack
