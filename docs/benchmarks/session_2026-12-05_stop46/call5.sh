#!/usr/bin/env bash
# Stop 46, call 5 (for an H200: calls 1-4 got H100s): call 3 (the hybrid's switch on qwen0.5b.qkv / o: the H200 column)
# and call 4 (the bulk kernel's late PDL trigger) in one run. Carries: .carry-s46/g2.tar.xz, .carry-s46/g3.tar.xz.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "${S46_ANY_GPU:-0}" != 1 ]; then
  echo "not an H200: stopping (S46_ANY_GPU=1 runs anyway)"; exit 0
fi
bash docs/benchmarks/session_2026-12-05_stop46/call3.sh 2>&1 | tail -60
bash docs/benchmarks/session_2026-12-05_stop46/call4.sh 2>&1 | tail -30
