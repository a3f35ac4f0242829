#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 1: the bulk decode kernel (decode_bulk.cu: a producer warp, cp.async.bulk ring).
# 1. its GPU tests (Decode.Bulk*); 2. knob A/B W4A16_DECODE_BULK=0 vs 1 (scripts/knob-ab: 6 large shapes x M = 1, 2, 4,
# 8, 16, fp16 uint4b8, 2 rounds interleaved, every row against f64); 3. forced bulk plans on three layers at M = 1 / 4.
T0=$(date +%s)
. scripts/lib/device-env.sh
mkdir -p .gpu/bin && tar -xJf .carry-s29/bins1.tar.xz -C .gpu/bin
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
timeout 150 .gpu/bin/w4a16_test_gpu_decode --gtest_filter='Decode.Bulk*' --gtest_brief=1 > $OUT/call1_bulk_test.log 2>&1; echo "bulk test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is|exception|rel_err|error" $OUT/call1_bulk_test.log | head -30
W4A16_AB_OLD=W4A16_DECODE_BULK=0 W4A16_AB_NEW=W4A16_DECODE_BULK=1 OUT=$OUT/ab timeout 300 bash scripts/knob-ab; echo "ab rc=$? t=$(($(date +%s)-T0))"
cat $OUT/ab/knob_ab.md | head -80
left=$((560 - ($(date +%s)-T0)))
if [ $left -gt 60 ]; then
  W4A16_AB_ARGS="--shapes 8192x8192,llama8b.gate_up,llama8b.down --ms 1,4 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16" \
  W4A16_AB_ROUNDS=1 W4A16_AB_OLD=W4A16_DECODE_BULK=1 \
  W4A16_AB_NEW="W4A16_DECODE_BULK_PLAN=1,2;W4A16_DECODE_BULK_PLAN=2,2;W4A16_DECODE_BULK_PLAN=4,2;W4A16_DECODE_BULK_PLAN=1,1;W4A16_DECODE_BULK_PLAN=2,1;W4A16_DECODE_BULK_PLAN=4,1" \
  OUT=$OUT/plans timeout $left env W4A16_DECODE_BULK=1 bash scripts/knob-ab; echo "plans rc=$?"
fi
echo "total $(($(date +%s)-T0)) s"
