#!/usr/bin/env bash
# Call 3: the measured table with the 2-CTA bm128_bn128 entries (branch prefill-bn256) against main 90277b2's
# table, two prefill_dq_ab binaries, 3 interleaved rounds (fp16 uint4b8 g128, cuBLAS fp16 in the same
# processes, y hashes compared); the plan GPU tests; the registry hybrid sweep fp16 uint4b8 (every row vs f64).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W/ab
tar -xJf .carry-bn256/bins3.tar.xz -C $W
timeout 60 $W/new/prefill_gpu_test --gtest_brief=1 --gtest_filter='PrefillPlan.*:*Measured*' > $OUT/call3_plan_tests.log 2>&1; echo "plan tests rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran" $OUT/call3_plan_tests.log
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,8192x8192:8192:8192
MS=64,65,100,128,129,200,256,385,400,512,897,1000,1024
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    timeout 80 $W/$b/prefill_dq_ab bench $W/ab/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab > $OUT/call3_table_ab.txt 2>&1
tail -4 $OUT/call3_table_ab.txt
timeout 100 $W/new/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,2,4,8,16,32,64,128,256,1024,4096 \
  --dtypes f16 --scalars uint4b8 --csv $OUT/call3_hybrid_f16_sym.csv > $W/hyb.log 2>&1; echo "hybrid f16 rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/hybrid_report.py $OUT/call3_hybrid_f16_sym.csv --markdown > $OUT/call3_hybrid_f16_report.md 2>&1
sed -n '1,/^$/p' $OUT/call3_hybrid_f16_report.md
tar -czf $OUT/call3_ab.tar.gz -C $W ab 2>/dev/null
echo "total $(($(date +%s)-T0)) s"
