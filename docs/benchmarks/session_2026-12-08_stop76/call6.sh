#!/usr/bin/env bash
# Stop 76 call 6 (carry .carry: scripts/pack-gpu's bin/ and cli/ of main, the benches but w4a16_bench_gpu left out,
# xz -9). Results: gpu.txt, r.tar.gz (the H200 rows), gc.tar.gz + gpu-check.log (the tests).
#  1. H200 only: the streamed bulk kernel forced (F) against the default (N), 10 PERF.md shapes x M = 4, 6, 8, 9, 12, 16
#     x fp16 / bf16 x both scalar types, 2 rounds, and the prefill path (P) at 9 / 12 / 16: the H200's 4..16-token rule
#  2. llama8b.qkv (384 stripes: the default bulk plan runs 96 items on 96 of 132 SMs) with the bulk kernel's 1- and
#     2-stripe plans forced (Q1 / Q2: 384 / 192 items on 132 blocks) against the default (QD), M = 1, 2, 4, 8, 12, 16,
#     fp16, both scalar types, 2 rounds
#  3. scripts/gpu-check without the sweeps and the sanitizer (every GPU test binary, the SASS check)
set -u
. scripts/lib/device-env.sh
S=/tmp/s76; rm -rf $S; mkdir -p $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p .gpu && tar -xJf .carry/gpu.tar.xz -C .gpu
B=.gpu/bin/w4a16_bench_gpu
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
pack() { tar -czf $OUT/r.tar.gz -C $S r; }
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
Q="--shapes llama8b.qkv --ms 1,2,4,8,12,16 --dtypes f16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  timeout 30 $B $Q --csv $S/r/QD_$r.csv > /dev/null 2>&1; log "QD $r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_PLAN=1,1 timeout 30 $B $Q --csv $S/r/Q1_$r.csv > /dev/null 2>&1; log "Q1 $r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_PLAN=2,1 timeout 30 $B $Q --csv $S/r/Q2_$r.csv > /dev/null 2>&1; log "Q2 $r rc=$?"
done
pack
OUT=/tmp/gc W4A16_SKIP_SANITIZER=1 W4A16_SKIP_SWEEP=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_MOE=1 W4A16_SKIP_READ=1 W4A16_SKIP_PREFILL_IL=1 \
  timeout 400 bash scripts/gpu-check > /dev/null 2>&1
log "gpu-check rc=$?"
cp /tmp/gc/gpu-check.log $OUT/ 2>/dev/null; tar -czf $OUT/gc.tar.gz -C /tmp gc
