#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 5 (main 'decode bulk by default: 1 token, or 2 ...'): 1. the MoE and prefill GPU tests
# (stop 28's review commits had not run on the device); 2. the decode standing: w4a16_bench_gpu on all 10 PERF.md shapes x
# M = 1, 2, 4, 8, 16 x fp16 / bf16, uint4b8 g128, cuBLAS in the same process; the PyTorch peers (tinygemm, torch.matmul)
# at the same M in the same call.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c5; mkdir -p $W/bin $W/out && tar -xJf .carry-s29/bins5.tar.xz -C $W/bin
B=$W/bin
timeout 220 $B/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/moe_test.log | head -5
timeout 150 $B/prefill_gpu_test --gtest_brief=1 > $W/out/prefill_test.log 2>&1; echo "prefill test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/prefill_test.log | head -5
timeout 90 $B/w4a16_bench_gpu --ms 1,2,4,8,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --decode-max-m 16 --csv $W/out/standing.csv > $W/out/standing.log 2>&1; echo "bench rc=$? t=$(($(date +%s)-T0))"
tail -2 $W/out/standing.log
PYTHONUNBUFFERED=1 timeout 200 python3 bench/gpu/peers_torch.py --ms 1,2,4,8,16 --csv $W/out/peers_torch.csv > $W/out/peers.log 2>&1; echo "peers rc=$? t=$(($(date +%s)-T0))"
tail -2 $W/out/peers.log
gzip -9 $W/out/*.log
tar -czf $OUT/call5.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
