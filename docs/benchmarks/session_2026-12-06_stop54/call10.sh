#!/usr/bin/env bash
# Stop 54 call 10 (an H100; carry .carry-s54d: branch prefill-next-prefetch's prefill_bench and prefill_gpu_test):
# the next-wave L2 prefetch (W4A16_PREFILL_NEXT_PREFETCH=1: after its k loop each CTA of a split-1 early-issue TMA grid
# asks L2 for the first weight / scale / zero words of the CTA one wave later), against the per-tile cost of calls 4 / 7.
#  A. prefill_gpu_test with the knob on (every config and configuration against the reference);
#  B. call 4's five layers at M = 1024 / 4096 with the knob's member in the interleaved group (2 processes);
#  C. call 7's K sweep likewise (1 process).
. scripts/lib/device-env.sh
mkdir -p /tmp/s54d && tar -xJf .carry-s54d/b.tar.xz -C /tmp/s54d
W4A16_PREFILL_NEXT_PREFETCH=1 timeout 200 /tmp/s54d/prefill_gpu_test --gtest_brief=1 > $OUT/test_on.log 2>&1  # (gzipped in call10_data); echo "tests rc=$?" | tee $OUT/tests.txt
grep -E "^\[  (PASSED|FAILED)|Failure" $OUT/test_on.log | head -20 | tee -a $OUT/tests.txt
O=$OUT; mkdir -p $O/b $O/c
export W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_NEXT_PREFETCH=1" CARRY=.carry-s54d
OUT=$O/b PROCS=2 bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
OUT=$O/c SHAPES=gu_k2048:28672:2048,llama8b.gate_up,gu_k8192:28672:8192 MS=1024 CONFIGS=20 PROCS=1 IL=15 \
  bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
