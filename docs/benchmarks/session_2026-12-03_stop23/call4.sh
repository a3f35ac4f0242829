#!/usr/bin/env bash
# stop 23 call 4 (right after call 3, the same machine: .gpu/bin unpacked by scripts/hybrid-check from .carry/gpu.tar.xz)
. scripts/lib/device-env.sh
timeout 200 .gpu/bin/w4a16_bench_moe $OUT/call4_moe.csv > $OUT/call4_moe.log 2>&1; echo "moe rc=$?"
