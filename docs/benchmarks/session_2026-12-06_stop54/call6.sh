#!/usr/bin/env bash
# Stop 54 call 6 (an H100; carry .carry-s54c: prepare.sh .carry-s54c, every tune plan in the interleaved group): which
# TMA tile is fastest when the GPU is power-capped (call 4's clock log: 1100-1600 MHz at 700 W under these GEMMs)?
# call4.sh with the early-issue tiles 20 (128 rows x 256 tokens), 22 (256 x 128), 26 (20 without the CTA barrier),
# 28 (192 x 192), 32 (128 x 128, 2 CTAs per SM), 34 (192 x 128) at split 1, interleaved with cuBLAS fp16 and the plan,
# 2 processes, llama8b.gate_up / qkv / o at M = 1024 / 4096.
sed -i 's/s54b/s54c/g' docs/benchmarks/session_2026-12-06_stop54/call4.sh  # the device's copy of the tree only
SHAPES=llama8b.gate_up,llama8b.qkv,llama8b.o MS=1024,4096 CONFIGS=20,22,26,28,32,34 PROCS=2 IL=15 \
  bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
