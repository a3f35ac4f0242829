#!/usr/bin/env bash
# Stop 54 call 11 (an H100; carry .carry-s54e: branch prefill-epi16's prefill_dq_ab, prefill_bench, prefill_gpu_test):
# the stmatrix epilogue (W4A16_PREFILL_EPI16=1: split-1 early-issue TMA tiles round acc [+ bias] in registers, stage the
# act-dtype tile by stmatrix.trans, 16 per 128 values instead of 128 fp32 stores, and store 16 bytes a step), against
# the epilogue's 9% of llama8b.gate_up M = 1024's warp samples (stop 53's ncu, ncu_regions.py).
#  A. prefill_dq_ab hash (every config forced, fp16 / bf16, uint4b8 / uint4, every group size) with the knob off / on:
#     the same lines (the same bits);
#  B. the interleaved A/B (call 4's five layers, M = 1024 / 4096, 2 processes; N = 28672 at K = 2048 / 4096, 1 process);
#  C. prefill_gpu_test with the knob on.
. scripts/lib/device-env.sh
mkdir -p /tmp/s54e && tar -xJf .carry-s54e/b.tar.xz -C /tmp/s54e
export W4A16_SEED=20261206
W4A16_PREFILL_EPI16=0 timeout 60 /tmp/s54e/prefill_dq_ab hash > $OUT/hash_off.txt 2>&1; echo "hash off rc=$?" | tee $OUT/a.txt
W4A16_PREFILL_EPI16=1 timeout 60 /tmp/s54e/prefill_dq_ab hash > $OUT/hash_on.txt 2>&1; echo "hash on rc=$?" | tee -a $OUT/a.txt
echo "lines $(wc -l < $OUT/hash_off.txt) / $(wc -l < $OUT/hash_on.txt), differing: $(diff $OUT/hash_off.txt $OUT/hash_on.txt | grep -c '^<')" | tee -a $OUT/a.txt
unset W4A16_SEED
O=$OUT; mkdir -p $O/b $O/c
export W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_EPI16=1" CARRY=.carry-s54e
OUT=$O/b PROCS=2 bash docs/benchmarks/session_2026-12-06_stop54/call4.sh > /dev/null
OUT=$O/c SHAPES=gu_k2048:28672:2048,llama8b.gate_up MS=1024 CONFIGS=20 PROCS=1 IL=15 bash docs/benchmarks/session_2026-12-06_stop54/call4.sh > /dev/null
W4A16_PREFILL_EPI16=1 timeout 120 /tmp/s54e/prefill_gpu_test --gtest_brief=1 > $O/test_on.log 2>&1; echo "tests rc=$?" | tee $O/tests.txt
grep -E "^\[  (PASSED|FAILED)|Failure" $O/test_on.log | head -20 | tee -a $O/tests.txt
