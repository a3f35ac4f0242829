#!/usr/bin/env bash
# Stop 54 call 9 (an H100; carry .carry-s54c): issue 5's mid-M row timed interleaved: M = 64 / 256 on the six large
# layers and the two Qwen2.5-0.5B layers that missed at M = 256 in stop 51 (sequential: llama8b.o 0.885, qkv 0.906,
# down 0.964, qwen0.5b.gate_up 0.853, qwen0.5b.qkv 0.907), the plan and cuBLAS fp16 replayed in turn, 2 processes.
sed -i 's/s54b/s54c/g' docs/benchmarks/session_2026-12-06_stop54/call4.sh  # the device's copy of the tree only
SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.qkv MS=64,256 \
  CONFIGS=20 PROCS=2 IL=21 bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
