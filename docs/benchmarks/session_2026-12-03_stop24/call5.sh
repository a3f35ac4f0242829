#!/usr/bin/env bash
# Call 5: the final branch (entries narrowed by call 4): every prefill GPU test and the registry GPU test, then
# the registry hybrid sweeps fp16 (uint4b8 M = 1..4096, uint4 M = 1..1024), every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W
tar -xJf .carry-bn256/bins5.tar.xz -C $W
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 150 $W/bin/$t --gtest_brief=1 > $OUT/call5_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran" $OUT/call5_$t.log
done
gzip -9 $OUT/call5_prefill_gpu_test.log
for sc in "uint4b8 1,2,4,8,16,32,64,128,256,1024,4096 sym" "uint4 1,4,16,32,64,128,256,1024 asym"; do
  set -- $sc
  timeout 90 $W/bin/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms $2 \
    --dtypes f16 --scalars $1 --csv $OUT/call5_hybrid_f16_$3.csv > /dev/null 2>&1; echo "$1 rc=$? t=$(($(date +%s)-T0))"
  python3 bench/gpu/hybrid_report.py $OUT/call5_hybrid_f16_$3.csv --markdown > $OUT/call5_hybrid_f16_$3_report.md 2>&1
  sed -n '1,/^$/p' $OUT/call5_hybrid_f16_$3_report.md
done
echo "total $(($(date +%s)-T0)) s"
