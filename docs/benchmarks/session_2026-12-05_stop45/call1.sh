#!/usr/bin/env bash
# Stop 45, call 1: stop 44's call6.sh (the bulk kernel's streamed x as a template variant: its GPU tests and a short
# A/B against call 2's build), then, only where the card is an H200, stop 44's call4.sh with the final build (C=c7:
# default plans against the bulk kernel forced with streamed x, 8 layers x M = 1, 4, 8, 9, 12, 16 x fp16 / bf16), which
# decides whether the streamed x should be the H200's default too. Carries: .carry-s44/c2.tar.xz, c7.tar.xz.
T0=$(date +%s)
S=docs/benchmarks/session_2026-12-05_stop44
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $G"
bash $S/call6.sh
case "$G" in *H200*) C=c7 TEST_S=1 ROUNDS=2 bash $S/call4.sh ;; esac
echo "call1 done t=$(($(date +%s)-T0))"
