#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 13 (main + the bench's act argument): the MoE layer with bf16 activations (the peer:
# the cuBLAS fp16 loop on the same values), T = 1..4096.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins13.tar.xz -C $W
timeout 150 $W/new/w4a16_bench_moe $OUT/call13_moe_bf16.csv 1,4,16,64,256,1024,2048,4096 bf16 > $OUT/call13_moe_bf16.log 2>&1; echo "bench rc=$?"
grep -E "chosen|_only" $OUT/call13_moe_bf16.csv
echo "total $(($(date +%s)-T0)) s"
