#!/usr/bin/env bash
# Stop 40, call 3 (prepared; no device was lent in stop 40): the decode math's issue rate two ways on
# data in shared memory (bench/gpu/imma_probe.cu; decode.md "Next: integer mma on nibble bytes with x in 16 bits"):
# fp16 dequantization + HMMA (the decode kernels' Dt<false>) against nibble bytes + IMMA m16n8k32 with x as int16 split
# hi / lo, at 8 and 16 tokens, 1 and 2 blocks of 8 warps per SM; first the IMMA path against f64 (the fragment mapping).
# Carry .carry-s40 (probe.tar.xz: w4a16_bench_imma_probe, stripped; rebuild with
# ninja -C build w4a16_bench_imma_probe).
# Static SASS (2026-12-05, per group of 128 k x 16 rows, one warp): 8 tokens fp16 106 / imma 79 instructions, 16 tokens
# 127 / 122 (the per-group int -> float epilogue: 16 I2FP, 24 FFMA, 10 FMUL). ~1 minute.
. scripts/lib/device-env.sh
mkdir -p /tmp/s40c3 && tar -xJf .carry-s40/probe.tar.xz -C /tmp/s40c3
B=/tmp/s40c3/w4a16_bench_imma_probe
for b in 1 2; do timeout 120 $B 2000 $b; done
