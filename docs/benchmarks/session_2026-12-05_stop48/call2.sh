#!/usr/bin/env bash
# Stop 48 call 2 (prepared; run by a later session). Carries: .carry-s48addr (scripts/prefill-ab/pack.sh: branch
# prefill-lean-addr = stop 47's prefill_lean_addr.patch, and main's prefill_dq_ab), .carry-s47e (stop 47's final
# w4a16_bench_gpu; main's decode / prefill code has not changed since).
#  1. the lean-address branch: its prefill GPU tests, bit-identical hashes against main (every config, dtype, scalar
#     type, group size), interleaved A/B at M = 64 / 128 / 256 on five layers, cuBLAS fp16 in the same processes.
#  2. stop 47's call5.sh: the hybrid's final llama8b.o table at M = 12..16 against both paths.
T0=$(date +%s)
. scripts/lib/device-env.sh
O=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee $O/gpu.txt
OUT=$O PREFILL_AB_NAME=lean_addr PREFILL_AB_BUDGET_S=300 PREFILL_AB_MS=64,128,256 \
  PREFILL_AB_SHAPES=8192x8192:8192:8192,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,llama70b.gate_up:57344:8192,llama8b.qkv:6144:4096 \
  timeout 320 bash .carry-s48addr/run.sh > /dev/null 2>&1
tail -45 $O/lean_addr.log; echo "lean_addr done t=$(($(date +%s)-T0))"
mkdir -p $O/c5 && OUT=$O/c5 timeout 150 bash docs/benchmarks/session_2026-12-05_stop47/call5.sh > $O/c5/log.txt 2>&1
tail -25 $O/c5/verify.txt
echo "total $(($(date +%s)-T0)) s"
