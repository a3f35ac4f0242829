#!/usr/bin/env bash
# Session 2026-12-04 call 1: (a) PrefillGpu.TailTokensReadNothingPastM on main (first run), every prefill GPU test
# on the tail-zero build; (b) prefill_dq_ab interleaved, 3 rounds each: main (old) / tail-zero (tz) / main with the
# bm128 occ2 entries widened (wide).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins1.tar.xz -C $W
timeout 60 $W/old/prefill_gpu_test --gtest_brief=1 --gtest_filter='PrefillGpu.TailTokens*' > $OUT/call1_old_tailtest.log 2>&1; echo "old tailtest rc=$? t=$(($(date +%s)-T0))"
tail -3 $OUT/call1_old_tailtest.log
timeout 150 $W/tz/prefill_gpu_test --gtest_brief=1 > $OUT/call1_tz_prefill_gpu_test.log 2>&1; echo "tz prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call1_tz_prefill_gpu_test.log | head
gzip -9 $OUT/call1_tz_prefill_gpu_test.log
SH=llama8b.gate_up:28672:4096,llama70b.gate_up:57344:8192,8192x8192:8192:8192,llama8b.qkv:6144:4096,llama8b.o:4096:4096,qwen0.5b.gate_up:9728:896
MS=17,65,72,80,88,96,129,160,1030
mkdir -p $W/runs
r=0
for order in "old tz wide" "wide tz old" "old wide tz"; do
  r=$((r+1))
  for b in $order; do
    timeout 90 $W/$b/prefill_dq_ab bench $W/runs/bench_${b}_$r.csv $SH $MS uint4b8 > $W/runs/log_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
for v in tz wide; do
  mkdir -p $W/ab_$v
  for r in 1 2 3; do cp $W/runs/bench_old_$r.csv $W/ab_$v/bench_old_$r.csv; cp $W/runs/bench_${v}_$r.csv $W/ab_$v/bench_new_$r.csv; done
  python3 scripts/prefill-ab/ab_table.py $W/ab_$v > $OUT/call1_table_$v.txt 2>&1
  echo "== $v"; cat $OUT/call1_table_$v.txt
done
tar -czf $OUT/call1_runs.tar.gz -C $W runs
echo "total $(($(date +%s)-T0)) s"
