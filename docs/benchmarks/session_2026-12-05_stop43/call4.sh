#!/usr/bin/env bash
# Main's decode GPU tests after the integer math's removal (Decode.PerTokenOnHardX new: the fp16 / bf16 math on hard x,
# each token against f64), then call3.sh's rounds (the bulk kernel forced against the default plans) as time allows.
# Binaries: `mkdir -p .carry-s43/c4 && cp build/tests/gpu/decode/w4a16_test_gpu_decode build/bench/gpu/w4a16_bench_gpu
# .carry-s43/c4/ && strip .carry-s43/c4/* && (cd .carry-s43 && tar -cJf c4.tar.xz c4 && rm -rf c4)`.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; OUT=/tmp/s43c4_out; mkdir -p $OUT; trap 'tar -czf $R/call4.tar.gz -C $OUT .' EXIT
W=/tmp/s43c4; mkdir -p $W && tar -xJf .carry-s43/c4.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout ${TEST_S:-200} $W/c4/w4a16_test_gpu_decode --gtest_brief=1 > $OUT/test_decode.log 2>&1
echo "decode tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is|token' $OUT/test_decode.log | head -20
mkdir -p $W/c3 && cp $W/c4/w4a16_bench_gpu $W/c3/ && (cd $W && tar -cJf c3.tar.xz c3)
mkdir -p .carry-s43 && cp $W/c3.tar.xz .carry-s43/c3.tar.xz
OUT=$R BUDGET_S=$(( ${BUDGET_S:-400} - ($(date +%s)-T0) )) ROUNDS=${ROUNDS:-2} bash docs/benchmarks/session_2026-12-05_stop43/call3.sh
