#!/usr/bin/env bash
# stop 23 call 2: the measured prefill plans (kMeasuredPrefillPlans) on the device.
#  1. every prefill GPU test (incl. PrefillPlan.MeasuredPlansApplyWhereMeasuredOnly) on the new build
#  2. A/B in one binary: W4A16_PREFILL_TABLE=0 (old: the cost model) vs 1 (new: the table), prefill_dq_ab bench,
#     interleaved old new | new old | old new, fp16 uint4b8 g128, cuBLAS fp16 in the same processes
#  3. the registry hybrid sweep fp16 uint4b8 (every row against f64; scripts/hybrid-check's first sweep)
#  4. both hybrid paths at M = 4..16 on llama8b.o / qkv (fp16 / bf16, uint4b8): the hybrid table's entry
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/tab; mkdir -p $W/ab /tmp/g
tar -xJf .carry-table/bins.tar.xz -C $W
tar -xJf .carry/gpu.tar.xz -C /tmp/g
B=/tmp/g/bin
timeout 120 $B/prefill_gpu_test --gtest_brief=1 > $OUT/call2_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran" $OUT/call2_prefill_gpu_test.log
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192
MS=8,16,24,32,64,100,128,200,256,1000,1024
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    t=1; [ $b = old ] && t=0
    W4A16_PREFILL_TABLE=$t timeout 80 $W/bin/prefill_dq_ab bench $W/ab/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab > $OUT/call2_table_ab.txt 2>&1
tail -4 $OUT/call2_table_ab.txt
timeout 130 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,2,4,8,16,32,64,128,256,1024,4096 \
  --dtypes f16 --scalars uint4b8 --csv $OUT/call2_hybrid_f16_sym.csv > $W/hyb.log 2>&1; echo "hybrid f16 rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/hybrid_report.py $OUT/call2_hybrid_f16_sym.csv --markdown > $OUT/call2_hybrid_f16_report.md 2>&1
sed -n '1,/^$/p' $OUT/call2_hybrid_f16_report.md
timeout 90 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 \
  --shapes llama8b.o,llama8b.qkv --ms 4,5,6,7,8,9,10,11,12,13,14,15,16 --dtypes f16,bf16 --scalars uint4b8 --csv $OUT/call2_hybrid_4to16.csv > $W/h416.log 2>&1
echo "4..16 rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/hybrid_threshold.py $OUT/call2_hybrid_4to16.csv 2>&1 | tail -12
tar -czf $OUT/call2_data.tar.gz -C $W ab ab_old_1.log hyb.log h416.log 2>/dev/null
echo "total $(($(date +%s)-T0)) s"
