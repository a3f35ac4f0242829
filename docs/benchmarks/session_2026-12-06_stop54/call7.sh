#!/usr/bin/env bash
# Stop 54 call 7 (an H100; carry .carry-s54c): does the interleaved gap to cuBLAS shrink with K? Calls 4 / 6 put the
# K = 4096 layers (llama8b.gate_up / qkv) at 0.90-0.95x and the long-K ones (llama8b.down K = 14336, 8192x8192) at
# 0.96-1.00x; each CTA runs one tile (one CTA per SM for the bm256 tile), so a tile's pipeline fill and epilogue are
# not hidden, a cost per tile that longer K amortizes. N = 28672 (gate_up's rows) at K = 2048 / 4096 / 8192 / 16384,
# M = 1024, the plan and config 20 interleaved with cuBLAS fp16, 2 processes.
sed -i 's/s54b/s54c/g' docs/benchmarks/session_2026-12-06_stop54/call4.sh  # the device's copy of the tree only
SHAPES=gu_k2048:28672:2048,llama8b.gate_up,gu_k8192:28672:8192,gu_k16384:28672:16384 MS=1024 CONFIGS=20 PROCS=2 IL=15 \
  bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
