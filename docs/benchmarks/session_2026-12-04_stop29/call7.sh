#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 7 (main 'decode: the three kernels pick their 16 instantiations through one helper'):
# the refactored host dispatch of all three decode kernels: every decode GPU test, the MoE GPU tests (moe_ring.cuh
# includes the changed header), and a short bench of M = 1, 2, 4, 16 on four shapes (every row against f64).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c7; mkdir -p $W/bin $W/out && tar -xJf .carry-s29/bins6.tar.xz -C $W/bin
B=$W/bin
timeout 200 $B/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head -5
timeout 150 $B/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/moe_test.log | head -5
timeout 60 $B/w4a16_bench_gpu --shapes 8192x8192,llama8b.o,qwen0.5b.qkv,qwen0.5b.down --ms 1,2,4,16 --dtypes f16 --scalars uint4b8 \
  --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/bench.csv > $W/out/bench.log 2>&1; echo "bench rc=$?"
grep -E "cuda_decode" $W/out/bench.log | awk '{print $2, $3, $6}' | head -20
gzip -9 $W/out/*.log; tar -czf $OUT/call7.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
