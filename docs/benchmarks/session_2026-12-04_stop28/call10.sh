#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 10 (main 47cae73): the standing of the MoE layer, w4a16_bench_moe at every T of issue 7
# (1, 4, 16, 64, 256, 1024, 4096) and 2048.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins10.tar.xz -C $W
timeout 200 $W/new/w4a16_bench_moe $OUT/call10_moe.csv 1,4,16,64,256,1024,2048,4096 > $OUT/call10_moe.log 2>&1; echo "bench rc=$?"
grep -E "chosen|_only" $OUT/call10_moe.csv
echo "total $(($(date +%s)-T0)) s"
