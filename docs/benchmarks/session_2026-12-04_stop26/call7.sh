#!/usr/bin/env bash
# Session 2026-12-04 stop 26, call 7 (main at the end of the session, after the model_plan refactor): every prefill
# GPU test and the registry GPU tests; the token splits of main (new) and of call 4's v2 binary (old, the same
# planning before the refactor) on 14 shapes x 33 token counts, and the plans PrefillGpu.PlanCoversPerfShapes prints
# (call 5's test binary as old), both of which must be identical line for line.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s26; mkdir -p $W
tar -xJf .carry-s26/bins7.tar.xz -C $W
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 170 $W/new/$t --gtest_brief=1 > $OUT/call7_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|token split" $OUT/call7_$t.log | head
done
gzip -9 $OUT/call7_prefill_gpu_test.log
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,llama70b.gate_up:57344:8192,q14b.o:5120:5120,q7b.qkv:4608:3584,q7b.gate_up:37888:3584,q7b.down:3584:18944
MS=1,8,16,17,32,33,64,65,100,128,129,200,256,260,300,384,512,520,600,768,800,1024,1030,1100,1280,1536,2048,2050,2100,3072,4096,4100,8200
$W/old/prefill_dq_ab plans $SH $MS > /dev/null 2> $W/plans_old.log
$W/new/prefill_dq_ab plans $SH $MS > /dev/null 2> $W/plans_new.log
if cmp -s $W/plans_old.log $W/plans_new.log; then echo "plans identical: $(wc -l < $W/plans_new.log) points, $(grep -c head $W/plans_new.log) token splits"; else echo "PLANS DIFFER"; diff $W/plans_old.log $W/plans_new.log | head -20; fi
timeout 60 $W/old/prefill_gpu_test --gtest_filter='*PlanCoversPerfShapes*' 2>&1 | grep "^plan " > $W/perf_plans_old.txt
zcat $OUT/call7_prefill_gpu_test.log.gz | grep "^plan " > $W/perf_plans_new.txt
if cmp -s $W/perf_plans_old.txt $W/perf_plans_new.txt; then echo "PERF.md plans identical: $(wc -l < $W/perf_plans_new.txt) lines"; else echo "PERF PLANS DIFFER"; diff $W/perf_plans_old.txt $W/perf_plans_new.txt | head; fi
gzip -9c $W/plans_new.log > $OUT/call7_plans.log.gz
echo "total $(($(date +%s)-T0)) s"
