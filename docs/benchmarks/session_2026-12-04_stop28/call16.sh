#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 16: the MoE GPU tests of the final tree (their knobs through test::ScopedEnv).
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins16.tar.xz -C $W
timeout 150 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call16_moe_test.log 2>&1; echo "moe test rc=$?"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $OUT/call16_moe_test.log | head
