#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 4 (main 'decode bulk: the warps of a stripe meet ...'): the bulk kernel as the default at
# 1..2 tokens. 1. every decode GPU test; 2. compute-sanitizer memcheck of the odd shapes (streaming and bulk kernels) and
# the bulk knob tests; 3. registry and CLI GPU tests (both run decode through the hybrid); 4. A/B W4A16_DECODE_BULK=0
# against the default on all 10 PERF.md shapes x M = 1, 2 x fp16 / bf16 x uint4b8 / uint4 (g128), 2 rounds interleaved.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c4; mkdir -p $W/bin $W/out && tar -xJf .carry-s29/bins4.tar.xz -C $W/bin
B=$W/bin
timeout 300 $B/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 $B/w4a16_test_gpu_decode --gtest_brief=1 \
  --gtest_filter='Decode.OddShapesAndScalarStaging:Decode.BulkRejectsBadKnobs' > $W/out/memcheck.log 2>&1; echo "memcheck rc=$? t=$(($(date +%s)-T0))"
tail -3 $W/out/memcheck.log
timeout 150 $B/w4a16_test_gpu_registry --gtest_brief=1 > $W/out/registry_test.log 2>&1; echo "registry test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/registry_test.log | head -5
W4A16_CLI=$B/cli/w4a16 timeout 100 $B/w4a16_test_cli_gpu --gtest_brief=1 > $W/out/cli_gpu_test.log 2>&1; echo "cli gpu test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/cli_gpu_test.log | head -5
ARGS=(--ms 1,2 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=0 timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/new_1.csv,$W/out/new_2.csv > $W/out/ab.md 2>&1; tail -2 $W/out/ab.md
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
