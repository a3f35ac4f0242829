#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 5: SCHED 3 (the early-issue k loop with the W words, scales and zeros of each stage as
# tensor-map boxes of thread 0 instead of every thread's cp.async; configs 35-37, twins of bm64 occ2, bm256, bm128_bn128
# occ2). Every prefill GPU test (the new configs in every config / split / twin-bitwise test), then the default plan with
# W4A16_PREFILL_SCHED=1 (main's order) against =3 (prefill_dq_ab bench, 3 interleaved rounds, y hashes compared) at
# points5.txt: where the plan's tile has no SCHED 3 twin both sides run the same kernel.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31; mkdir -p $W
tar -xJf .carry-s31/bins5.tar.xz -C $W
timeout 200 $W/new/prefill_gpu_test --gtest_brief=1 > $OUT/call5_prefill_gpu_test.log 2>&1
echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|Failure" $OUT/call5_prefill_gpu_test.log | head -8
B=$W/new/prefill_dq_ab
SH=$(awk '{printf "%s%s", (NR > 1 ? "," : ""), $1}' .carry-s31/points5.txt)
W4A16_PREFILL_SCHED=3 $B plans $SH 64,100,128,256,1024,2048,4096 > /dev/null 2> $OUT/call5_plans_s3.log
timeout 300 bash scripts/prefill-ab/points_ab.sh "env W4A16_PREFILL_SCHED=1 $B" "env W4A16_PREFILL_SCHED=3 $B" .carry-s31/points5.txt $W/ab 3 \
  > $W/ab_progress.txt 2>&1
echo "ab rc=$? t=$(($(date +%s)-T0))"; grep FAIL $W/ab_progress.txt | head
python3 scripts/prefill-ab/ab_table.py $W/ab | tee $OUT/call5_table_ab.txt
tar -czf $OUT/call5_ab.tar.gz -C $W ab ab_progress.txt
gzip -9 $OUT/call5_prefill_gpu_test.log
echo "total $(($(date +%s)-T0)) s"
