#!/usr/bin/env bash
# Stop 58's first device call (carry .carry, .carry-lean, .carry-s57c5): on an H200, issue 5's rows as they stand
# (call2.sh: never measured there with the current prefill kernel), then main's GPU tests in the time left; on any
# other GPU, call1.sh (stop 57's prepared calls: row split, split-tail trace, GPU tests).
set -u
D=docs/benchmarks/session_2026-12-06_stop58
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash $D/call2.sh; echo "call2 done ${SECONDS}s"
  left=$((580 - SECONDS)); echo "tests get ${left}s"
  timeout $left bash docs/benchmarks/session_2026-12-06_stop57/call1.sh; echo "tests rc=$? ${SECONDS}s"
else
  bash $D/call1.sh
fi
