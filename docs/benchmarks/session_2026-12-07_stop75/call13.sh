#!/usr/bin/env bash
# Stop 75 call 13 (carry .carry-l74b: main at 4d3c411 as w4a16_bench_gpu / w4a16_test_gpu_decode, stop 74 call 2's build
# as w4a16_bench_gpu_c2): call3.sh's steps reordered by priority for a short budget, results packed after each step.
#  1. decode tests of the build (every configuration at M = 1..16 on the default plans, the streamed bulk kernel's)
#  2. H200 only: the streamed bulk kernel forced (F) against the default (N), 10 PERF.md shapes x M = 4, 6, 8, 9, 12, 16
#     x fp16 / bf16 x both scalar types, 2 rounds; the prefill path (P) at 9 / 12 / 16: the H200's 9..16 rule
#  3. qwen0.5b.down 12..16 tokens: one stripe forced (QF, W4A16_DECODE_BULK_PLAN=1,1) against the default (QN), 2 rounds
#  4. the hybrid through the registry at M = 8 / 9 / 12 / 16 on the layers whose H100 column moved in stop 74
#  5. the default C (call 2's build) against N on five layers at M = 4 / 6 / 8 (the one-round rule, 4..8 tokens)
set -u
. scripts/lib/device-env.sh
S=/tmp/s75; rm -rf $S; mkdir -p $S/b $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l74b/b.tar.xz -C $S/b
B=$S/b/w4a16_bench_gpu
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
pack() { tar -czf $OUT/r.tar.gz -C $S r; }
timeout 90 $S/b/w4a16_test_gpu_decode --gtest_filter='Decode.EveryConfigurationM1To16:Decode.BulkStreamedX:Decode.BulkForcedPlansPersistentItems' > $OUT/t_decode.log 2>&1
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
Q="--shapes qwen0.5b.down --ms 12,13,14,15,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  timeout 30 $B $Q --csv $S/r/QN_$r.csv > /dev/null 2>&1; log "QN $r rc=$?"
  W4A16_DECODE_BULK_PLAN=1,1 timeout 30 $B $Q --csv $S/r/QF_$r.csv > /dev/null 2>&1; log "QF $r rc=$?"
done
pack
timeout 120 $B --registry cuda_hybrid,cuda_decode,cuda_prefill --no-cublas --decode-max-m 0 \
  --shapes llama8b.down,8192x8192,qwen0.5b.gate_up,llama8b.o,llama8b.qkv,llama70b.gate_up --ms 8,9,12,16 --dtypes f16,bf16 \
  --scalars uint4b8,uint4 --no-extra-groups --csv $S/r/hybrid.csv > $S/r/h.log 2>&1; log "hybrid rc=$?"; pack
D="--shapes llama8b.o,llama8b.qkv,8192x8192,llama8b.gate_up,llama70b.gate_up --ms 4,6,8 --dtypes f16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  timeout 40 $S/b/w4a16_bench_gpu_c2 $D --csv $S/r/C_$r.csv > /dev/null 2>&1; log "C $r rc=$?"
  timeout 40 $B $D --csv $S/r/N_$r.csv > /dev/null 2>&1; log "N $r rc=$?"
done
pack
