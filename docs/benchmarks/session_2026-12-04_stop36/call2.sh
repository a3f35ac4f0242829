#!/usr/bin/env bash
# Session 2026-12-04 stop 36, call 2 (PREPARED, NOT RUN; optional, after call 1 passed): what the sm_90 features buy on
# the H200. The same hybrid sweep through the registry with the sm_90a build (base/w4a16_bench_gpu of .carry-s35: main
# 6fd6703, whose kernels are SASS-identical to main's now) and the sm_80 code (bin/w4a16_bench_gpu of .carry-sm80: the
# compute_80 PTX, no clusters, bulk copies, PDL or wgmma), 2 interleaved rounds, cuBLAS and f64 checks in each run.
# Carry .carry-s35 and .carry-sm80. ~5 minutes. ab_compare's ratio = sm_90a us / sm_80 us (< 1: sm_90a faster).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s36c2; mkdir -p $W/out $W/s90 $W/s80
tar -xJf .carry-s35/bins1.tar.xz -C $W/s90 base/w4a16_bench_gpu && tar -xJf .carry-sm80/bins.tar.xz -C $W/s80 --strip-components=1 bin/w4a16_bench_gpu
export CUDA_CACHE_PATH=/tmp/sm80-jit CUDA_CACHE_MAXSIZE=4294967296
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
ARGS="--shapes 8192x8192,llama8b.gate_up,llama8b.down,qwen0.5b.qkv --ms 1,4,16,64,256,1024 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --registry cuda_hybrid"
for r in 1 2; do
  timeout 120 $W/s90/base/w4a16_bench_gpu $ARGS --csv $W/out/sm90_$r.csv > $W/out/sm90_$r.txt 2>&1; echo "sm90 round $r rc=$? t=$(($(date +%s)-T0))"
  timeout 150 $W/s80/w4a16_bench_gpu $ARGS --csv $W/out/sm80_$r.csv > $W/out/sm80_$r.txt 2>&1; echo "sm80 round $r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/sm90_1.csv,$W/out/sm90_2.csv $W/out/sm80_1.csv,$W/out/sm80_2.csv > $W/out/sm90_vs_sm80.md
cat $W/out/sm90_vs_sm80.md | head -80
tar -czf $OUT/call2.tar.gz -C $W/out .
