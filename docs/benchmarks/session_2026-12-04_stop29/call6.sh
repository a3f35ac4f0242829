#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 6 (main 'decode bulk by default: 1 token, or 2 ...', call 5's binaries): compute-sanitizer
# on the bulk kernel: memcheck over every configuration at M = 1..16, every forced plan with persistent items and the knob
# tests; synccheck (the named barriers of a stripe's warps, every plan shape) over the forced plans.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c6; mkdir -p $W/bin $W/out && tar -xJf .carry-s29/bins5.tar.xz -C $W/bin
B=$W/bin
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 $B/w4a16_test_gpu_decode --gtest_brief=1 \
  --gtest_filter='Decode.BulkEveryConfigurationM1To16:Decode.BulkForcedPlansPersistentItems:Decode.BulkRejectsBadKnobs' > $W/out/memcheck.log 2>&1
echo "memcheck rc=$? t=$(($(date +%s)-T0))"; grep -E "tests ran|PASSED|FAILED|ERROR SUMMARY" $W/out/memcheck.log | head -5
timeout 200 compute-sanitizer --tool synccheck --error-exitcode 9 --print-limit 20 $B/w4a16_test_gpu_decode --gtest_brief=1 \
  --gtest_filter='Decode.BulkForcedPlansPersistentItems' > $W/out/synccheck.log 2>&1
echo "synccheck rc=$? t=$(($(date +%s)-T0))"; grep -E "tests ran|PASSED|FAILED|ERROR SUMMARY" $W/out/synccheck.log | head -5
gzip -9 $W/out/*.log; tar -czf $OUT/call6.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
