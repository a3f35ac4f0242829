#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 14: the CLI's `w4a16 moe --device cuda` (w4a16_test_cli_gpu: a synthetic AWQ MoE
# checkpoint, every CUDA block, the tool's check against moe_reference), and one run printed.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins14.tar.xz -C $W
W4A16_CLI=$W/new/w4a16 timeout 120 $W/new/w4a16_test_cli_gpu > $OUT/call14_cli_gpu_test.log 2>&1; echo "cli gpu test rc=$?"
grep -E "OK|FAILED|SKIPPED|Failure|rc|err" $OUT/call14_cli_gpu_test.log | head -20
echo "total $(($(date +%s)-T0)) s"
