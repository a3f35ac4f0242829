#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 15 (main + the bench's scalar argument): the MoE layer with uint4 weights (zero points,
# as AWQ checkpoints have them), fp16, T = 1..4096; the peer dequantizes the same zeros.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins15.tar.xz -C $W
timeout 150 $W/new/w4a16_bench_moe $OUT/call15_moe_uint4.csv 1,4,16,64,256,1024,2048,4096 f16 uint4 > $OUT/call15_moe_uint4.log 2>&1; echo "bench rc=$?"
grep -E "chosen" $OUT/call15_moe_uint4.csv
echo "total $(($(date +%s)-T0)) s"
