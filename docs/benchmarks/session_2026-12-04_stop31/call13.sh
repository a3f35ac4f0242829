#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 13 (main b1816f7, the final code): the registry, MoE and CLI GPU tests (decode and
# prefill GPU tests ran on the final kernels and rules in calls 11 and 3).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c13; mkdir -p $W/out $W/b && tar -xJf .carry-s31/bins13.tar.xz -C $W/b
export W4A16_CLI=$W/b/cli/w4a16
for t in w4a16_test_gpu_registry w4a16_test_cli_gpu w4a16_test_gpu_moe; do
  timeout 150 $W/b/bin/$t --gtest_brief=1 > $W/out/$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $W/out/$t.log | head -4
done
tar -czf $OUT/call13.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
