#!/usr/bin/env bash
# Call 9 (branch prefill-tail-box): the last m block's TMA box holds only its M % BM token rows (a second tensor
# map). Every prefill GPU test; prefill_dq_ab of main (old) against the branch (new), 2 interleaved rounds, y
# hashes must match (the same math); forced split-1 tiles at partly filled m blocks (call 8's probe again).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W/ab
tar -xJf .carry-bn256/bins9.tar.xz -C $W
timeout 120 $W/new/prefill_gpu_test --gtest_brief=1 > $OUT/call9_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call9_prefill_gpu_test.log | head
gzip -9 $OUT/call9_prefill_gpu_test.log
SH=llama8b.gate_up:28672:4096,llama70b.gate_up:57344:8192,8192x8192:8192:8192,llama8b.qkv:6144:4096,llama8b.o:4096:4096,qwen0.5b.gate_up:9728:896
MS=17,65,72,96,129,200,1000,1030
r=0
for pair in "old new" "new old"; do
  r=$((r+1))
  for b in $pair; do
    timeout 60 $W/$b/prefill_dq_ab bench $W/ab/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab > $OUT/call9_table_ab.txt 2>&1
cat $OUT/call9_table_ab.txt
W4A16_PREFILL_TUNE_CONFIGS=32,23 W4A16_PREFILL_TUNE_MS=65,72,96,128 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up,llama8b.gate_up \
  W4A16_PREFILL_SPLIT_REDUCE=kernel timeout 60 $W/new/prefill_bench $OUT/call9_tune.csv tune_tma > /dev/null 2>&1
echo "tune rc=$? t=$(($(date +%s)-T0))"
grep -E ":s1," $OUT/call9_tune.csv | cut -d, -f1,2,5,10 | sed 's/cuda_prefill://'
echo "total $(($(date +%s)-T0)) s"
