#!/usr/bin/env bash
# Stop 54 call 8 (an H200 if lent; carry .carry-s54c): calls 4 and 7 on the card of the targets: the interleaved
# prefill / cuBLAS rows of the five >= 8 MB Llama-3-8B / 8192x8192 layers at M = 1024 / 4096 (3 processes) into
# $OUT/a, then N = 28672 at K = 2048..16384, M = 1024 (2 processes) into $OUT/b.
sed -i 's/s54b/s54c/g' docs/benchmarks/session_2026-12-06_stop54/call4.sh  # the device's copy of the tree only
O=$OUT
mkdir -p $O/a $O/b
OUT=$O/a bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
OUT=$O/b SHAPES=gu_k2048:28672:2048,llama8b.gate_up,gu_k8192:28672:8192,gu_k16384:28672:16384 MS=1024 CONFIGS=20 PROCS=2 IL=15 \
  bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
