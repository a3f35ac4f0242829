#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 6: block 128 aligns at 64 with block lists (each GEMM as a bm128 pass over the whole
# 128-row blocks + a bm64 pass over the 64-row tails); the grouped mode only in the early-issue kernels. 1. MoE GPU tests;
# 2. w4a16_bench_moe new / old (call 5's binary) / new at T = 1024, 2048, 4096; 3. prefill GPU tests, the linear outputs
# bit-identical to the session's start (hash) and a 2-round A/B of the linear default plans (8 points) against it.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins6.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call6_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is" $OUT/call6_moe_test.log | head -20
for r in new_r1 old new_r2; do
  b=${r%_r*}
  timeout 100 $W/$b/w4a16_bench_moe $OUT/call6_$r.csv 1024,2048,4096 > /dev/null 2>&1; echo "$r rc=$?"
done
for f in call6_new_r1 call6_old call6_new_r2; do echo "== $f"; grep -E "chosen|128,forced|64,forced|align_only" $OUT/$f.csv; done
timeout 150 $W/new/prefill_gpu_test --gtest_brief=1 > $OUT/call6_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call6_prefill_gpu_test.log | head
export W4A16_SEED=20261204
timeout 60 $W/old/prefill_dq_ab hash > $W/hash_old.log 2>&1; timeout 60 $W/new/prefill_dq_ab hash > $W/hash_new.log 2>&1
unset W4A16_SEED
grep '^hash ' $W/hash_old.log > $W/h_old.txt; grep '^hash ' $W/hash_new.log > $W/h_new.txt
echo "hash lines old $(wc -l < $W/h_old.txt) new $(wc -l < $W/h_new.txt) differing $(diff $W/h_old.txt $W/h_new.txt | grep -c '^[<>]')"
cat > $W/points.txt <<'P'
8192x8192:8192:8192 64,1024
llama8b.qkv:6144:4096 256,1024
qwen0.5b.gate_up:9728:896 128,1024
llama8b.gate_up:28672:4096 64,4096
P
left=$((560 - ($(date +%s)-T0)))
if [ $left -gt 60 ]; then
  timeout $left bash scripts/prefill-ab/points_ab.sh $W/old/prefill_dq_ab $W/new/prefill_dq_ab $W/points.txt $W/ab 2 > $OUT/call6_linear_ab.txt 2>&1
  echo "ab rc=$?"; tail -14 $OUT/call6_linear_ab.txt
fi
gzip -9 $OUT/call6_moe_test.log $OUT/call6_prefill_gpu_test.log
echo "total $(($(date +%s)-T0)) s"
