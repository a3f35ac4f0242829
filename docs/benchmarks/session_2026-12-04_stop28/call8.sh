#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 8: where the grouped path's time goes: w4a16_bench_moe with the gather_only and
# reduce_only rows (the x-row gather and the weighted reduce alone) at T = 1024, 4096.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins8.tar.xz -C $W
timeout 120 $W/new/w4a16_bench_moe $OUT/call8_moe.csv 1024,4096 > $OUT/call8_moe.log 2>&1; echo "bench rc=$?"
grep -E "chosen|_only" $OUT/call8_moe.csv
echo "total $(($(date +%s)-T0)) s"
