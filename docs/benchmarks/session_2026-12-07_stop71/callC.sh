#!/usr/bin/env bash
# Stop 71 call C (carry .carry-l71d: new/ = the build with llama8b.down M = 193..256 on bm256 split 4 through the reduce
# kernel and its grown workspace, plus the llama8b.qkv entry from 164; old/ = main b1f063f's prefill_dq_ab): the whole
# prefill_gpu_test, the hybrid against f64 at the changed points (the registry sizes the workspace: the grown one), and
# the interleaved A/B of the default plans, old against new (7 rounds).
set -u
. scripts/lib/device-env.sh
S=/tmp/s71d; rm -rf $S; mkdir -p $S
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf ${CARRY:-.carry-l71d}/b.tar.xz -C $S
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 240 $S/new/prefill_gpu_test > $OUT/prefill_gpu_test.log 2>&1; log "prefill_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|cluster entry" $OUT/prefill_gpu_test.log | tail -8
timeout 180 $S/new/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-cublas --shapes llama8b.down,llama8b.qkv \
  --ms 192,193,224,256,257 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/hybrid.csv > $OUT/hybrid.log 2>&1
log "hybrid rc=$?"; tail -2 $OUT/hybrid.log
printf '%s\n' "llama8b.down:4096:14336 192,193,208,224,240,256,257" "llama8b.qkv:6144:4096 163,164,192,256" > $S/p.txt
bash scripts/prefill-ab/points_ab.sh $S/old/prefill_dq_ab $S/new/prefill_dq_ab $S/p.txt $S/ab ${ROUNDS:-7} > $OUT/ab.txt 2>&1
log "ab"; tail -14 $OUT/ab.txt
tar -czf $OUT/ab.tar.gz -C $S ab
