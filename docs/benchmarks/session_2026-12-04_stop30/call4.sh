#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 4: the bulk decode kernel's default widened (bulk_by_default: 3 tokens where its plan keeps
# the SMs evenly busy, up to 6 on layers under 8 MB, up to 8 where blocks stream >= 4 rounds of items). 1. every decode GPU
# test, the registry and CLI GPU tests (the hybrid runs decode_plan); 2. A/B of the default against main's default (old
# binary), 10 PERF.md shapes x M = 1..8 x fp16 / bf16 x uint4b8 / uint4 (g128), 2 rounds interleaved; 3. the standing:
# M = 1, 2, 3, 4, 6, 8, 16 with cuBLAS in the process, and the PyTorch peers (tinygemm, torch.matmul) at the same M.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c4; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins4.tar.xz -C .gpu/bin
B=.gpu/bin
timeout 200 $B/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head
timeout 150 $B/w4a16_test_gpu_registry --gtest_brief=1 > $W/out/registry_test.log 2>&1; echo "registry test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/registry_test.log | head -5
W4A16_CLI=$B/cli/w4a16 timeout 100 $B/w4a16_test_cli_gpu --gtest_brief=1 > $W/out/cli_gpu_test.log 2>&1; echo "cli gpu test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/cli_gpu_test.log | head -5
ARGS=(--ms 1,2,3,4,5,6,7,8 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  timeout 120 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  timeout 120 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/new_1.csv,$W/out/new_2.csv > $W/out/ab.md 2>&1; tail -1 $W/out/ab.md
timeout 120 $B/w4a16_bench_gpu --ms 1,2,3,4,6,8,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --decode-max-m 16 --csv $W/out/standing.csv > $W/out/standing.log 2>&1; echo "standing rc=$? t=$(($(date +%s)-T0))"
PYTHONUNBUFFERED=1 timeout 200 python3 bench/gpu/peers_torch.py --ms 1,2,3,4,6,8,16 --csv $W/out/peers_torch.csv > $W/out/peers.log 2>&1; echo "peers rc=$? t=$(($(date +%s)-T0))"
gzip -9 $W/out/*.log
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
