#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 5: x per ring stage in the bulk decode kernel (W4A16_DECODE_BULK_XSTAGE=1: the producer's
# lanes copy each stage's x rows by cp.async after griddepcontrol.wait, a second arrival per lane; stages filled before
# the wait get theirs after it). 1. the bulk decode GPU tests with XSTAGE=1 (every configuration, forced plans, model
# shapes, chains under PDL + graph, determinism) and compute-sanitizer memcheck of the forced plans with it; every decode
# GPU test without it; 2. A/B with the bulk kernel forced, 10 PERF.md shapes x M = 1, 2, 3, 4, 6, 8, 12, 16 x fp16 / bf16
# (uint4b8 g128), 2 rounds: main's build (old), this build with x staged whole (xs0) and x per stage (xs1).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c5; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins5.tar.xz -C .gpu/bin
B=.gpu/bin
W4A16_DECODE_BULK_XSTAGE=1 timeout 150 $B/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*:Decode.OddShapes*' > $W/out/decode_test_xstage.log 2>&1; echo "decode test xstage rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test_xstage.log | head
W4A16_DECODE_BULK_XSTAGE=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 $B/w4a16_test_gpu_decode --gtest_brief=1 \
  --gtest_filter='Decode.BulkForcedPlansPersistentItems' > $W/out/memcheck_xstage.log 2>&1; echo "memcheck rc=$? t=$(($(date +%s)-T0))"
tail -2 $W/out/memcheck_xstage.log
timeout 150 $B/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
ARGS=(--ms 1,2,3,4,6,8,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/xs0_$r.csv > /dev/null 2>&1; echo "xs0 r$r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTAGE=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/xs1_$r.csv > /dev/null 2>&1; echo "xs1 r$r rc=$? t=$(($(date +%s)-T0))"
done
for v in xs0 xs1; do
  python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/${v}_1.csv,$W/out/${v}_2.csv > $W/out/ab_$v.md 2>&1; echo "$v: $(tail -1 $W/out/ab_$v.md)"
done
gzip -9 $W/out/*.log
tar -czf $OUT/call5.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
