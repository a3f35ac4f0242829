#!/usr/bin/env bash
# Session 2026-12-04 stop 36, call 1 (PREPARED, NOT RUN: no device was lent in stop 36). The sm_80 (A100) code on the
# H200: carry .carry-sm80 (bins.tar.xz from `scripts/gpu-check-sm80 pack` on main: W4A16_CUDA_ARCHS=80 with the
# compute_80 PTX, stripped). scripts/gpu-check-sm80 runs the decode, prefill, registry, MoE and CLI GPU tests on it (the
# driver compiles the PTX for sm_90 on first use; code_arch() = 80, so no clusters, bulk copies, PDL or wgmma), then the
# hybrid through the registry on 3 layers x M = 1..1024 with cuBLAS in the same process, every row against f64.
# ~8-10 minutes (the JIT of every kernel the tests touch, once, into CUDA_CACHE_PATH).
T0=$(date +%s)
W=/tmp/s36c1; mkdir -p $W/out
OUT=$W/out timeout 590 bash scripts/gpu-check-sm80
echo "rc=$? t=$(($(date +%s)-T0))"
tar -czf $OUT/call1.tar.gz -C $W/out .
