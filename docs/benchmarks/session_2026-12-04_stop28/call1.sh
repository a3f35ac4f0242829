#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 1: the grouped wgmma MoE path (blocks 64 / 128 through the linear prefill kernel in
# grouped mode). 1. the MoE GPU tests (every path incl. 128, every grouped tile, the mma.sync 64 via W4A16_MOE_WGMMA=0);
# 2. w4a16_bench_moe at T = 64..4096 (cuBLAS loop, chosen / forced / mma64 / tiles rows); 3. the linear prefill outputs
# bit-identical to main's (prefill_dq_ab hash, old = HEAD before this change); 4. prefill / registry GPU tests (the stop 27
# review refactor too); 5. a 2-round A/B of the default linear plans at 8 points (old vs new kernel binary).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins1.tar.xz -C $W
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call1_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is|block" $OUT/call1_moe_test.log | head -30
timeout 180 $W/new/w4a16_bench_moe $OUT/call1_moe.csv 64,256,1024,4096 > $OUT/call1_moe_bench.log 2>&1; echo "moe bench rc=$? t=$(($(date +%s)-T0))"
cat $OUT/call1_moe.csv
export W4A16_SEED=20261204
timeout 60 $W/old/prefill_dq_ab hash > $W/hash_old.log 2>&1; echo "hash old rc=$?"
timeout 60 $W/new/prefill_dq_ab hash > $W/hash_new.log 2>&1; echo "hash new rc=$?"
unset W4A16_SEED
grep '^hash ' $W/hash_old.log > $W/h_old.txt; grep '^hash ' $W/hash_new.log > $W/h_new.txt
echo "hash lines old $(wc -l < $W/h_old.txt) new $(wc -l < $W/h_new.txt) differing $(diff $W/h_old.txt $W/h_new.txt | grep -c '^[<>]') t=$(($(date +%s)-T0))"
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 150 $W/new/$t --gtest_brief=1 > $OUT/call1_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call1_$t.log | head
done
cat > $W/points.txt <<'P'
8192x8192:8192:8192 64,1024
llama8b.qkv:6144:4096 256,1024
qwen0.5b.gate_up:9728:896 128,1024
llama8b.gate_up:28672:4096 64,4096
P
left=$((560 - ($(date +%s)-T0)))
if [ $left -gt 60 ]; then
  timeout $left bash scripts/prefill-ab/points_ab.sh $W/old/prefill_dq_ab $W/new/prefill_dq_ab $W/points.txt $W/ab 2 > $OUT/call1_linear_ab.txt 2>&1
  echo "ab rc=$?"; tail -14 $OUT/call1_linear_ab.txt
fi
gzip -9 $OUT/call1_prefill_gpu_test.log $OUT/call1_moe_test.log
echo "total $(($(date +%s)-T0)) s"
