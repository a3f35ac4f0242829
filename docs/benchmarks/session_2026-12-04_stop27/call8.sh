#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 8 (main: the cost model weighs the 2-CTA bm128_bn128 up to 128 tokens): its plans
# against the build before (call 7's binary, W4A16_PREFILL_MODEL_WIDE=0) where they differ, on 18 layer shapes at
# M = 72 / 100 / 128, prefill_dq_ab bench 2 interleaved rounds (capped at 110 s); then every prefill GPU test and the
# registry GPU tests of main.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins8.tar.xz -C $W
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,q7b.qkv:4608:3584,q7b.o:3584:3584,q7b.gate_up:37888:3584,q7b.down:3584:18944,q14b.qkv:7168:5120,q14b.o:5120:5120,q14b.gate_up:27648:5120,l70b.qkv:10240:8192,l70b.down:8192:28672
MS=72,100,128
W4A16_PREFILL_MODEL_WIDE=0 $W/old/prefill_dq_ab plans $SH $MS > /dev/null 2> $OUT/call8_plans_old.log
$W/new/prefill_dq_ab plans $SH $MS > /dev/null 2> $OUT/call8_plans_new.log
python3 scripts/prefill-ab/plans_diff.py $OUT/call8_plans_old.log $OUT/call8_plans_new.log | tee $OUT/call8_points.txt
timeout 110 bash scripts/prefill-ab/points_ab.sh "env W4A16_PREFILL_MODEL_WIDE=0 $W/old/prefill_dq_ab" "$W/new/prefill_dq_ab" $OUT/call8_points.txt $W/ab 2 \
  > /dev/null 2>&1
echo "ab rc=$? t=$(($(date +%s)-T0))"
python3 scripts/prefill-ab/ab_table.py $W/ab | tee $OUT/call8_table_ab.txt
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 140 $W/new/$t --gtest_brief=1 > $OUT/call8_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|gpu dense" $OUT/call8_$t.log | head
done
gzip -9 $OUT/call8_prefill_gpu_test.log $OUT/call8_plans_old.log $OUT/call8_plans_new.log
echo "total $(($(date +%s)-T0)) s"
