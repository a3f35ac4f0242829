#!/usr/bin/env bash
# Session 2026-12-04 call 4 (main fbf92f8): every prefill GPU test, the tail test again with the full box
# (W4A16_PREFILL_TAIL_BOX=0); one binary, the last m block's box cut to M % BM (new, default) against the
# full zero-filled box (old, =0), 3 interleaved rounds; tune_tma of the 192-token tile at M = 320..768.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins4.tar.xz -C $W
B=$W/c4
timeout 150 $B/prefill_gpu_test --gtest_brief=1 > $OUT/call4_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call4_prefill_gpu_test.log | head
gzip -9 $OUT/call4_prefill_gpu_test.log
W4A16_PREFILL_TAIL_BOX=0 timeout 60 $B/prefill_gpu_test --gtest_brief=1 --gtest_filter='PrefillGpu.TailTokens*:PrefillGpu.Tma*' > $OUT/call4_fullbox_tests.log 2>&1; echo "fullbox tests rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call4_fullbox_tests.log | head
SH=llama8b.o:4096:4096,qwen0.5b.gate_up:9728:896,qwen0.5b.qkv:1152:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,8192x8192:8192:8192,llama8b.gate_up:28672:4096,llama8b.down:4096:14336
MS=17,32,72,96,129,200,1030
mkdir -p $W/ab4
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    if [ $b = old ]; then export W4A16_PREFILL_TAIL_BOX=0; else unset W4A16_PREFILL_TAIL_BOX; fi
    timeout 90 $B/prefill_dq_ab bench $W/ab4/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab4/log_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
unset W4A16_PREFILL_TAIL_BOX
python3 scripts/prefill-ab/ab_table.py $W/ab4 > $OUT/call4_table_ab.txt 2>&1
cat $OUT/call4_table_ab.txt
tar -czf $OUT/call4_ab.tar.gz -C $W ab4
W4A16_PREFILL_TUNE_CONFIGS=28,20,22,23,32 W4A16_PREFILL_TUNE_MS=320,384,576,768 \
  W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down,llama70b.gate_up \
  timeout 200 $B/prefill_bench $OUT/call4_tune.csv tune_tma > $OUT/call4_tune.log 2>&1
echo "tune rc=$? t=$(($(date +%s)-T0))"
python3 .carry-s25/best.py $OUT/call4_tune.csv
gzip -9 $OUT/call4_tune.csv
echo "total $(($(date +%s)-T0)) s"
