#!/usr/bin/env bash
# Session 2026-12-04 stop 33, call 5: the bulk decode kernel's pair variant ("new": uint4 with g >= 128 or channelwise at
# an even tile count: the producer copies the scale / zero rows of even tiles only, the consumers read them once per
# pair and keep one fp32 partial per pair; every other variant SASS-identical to main) against main (e4c79d7). First
# new's decode and registry GPU tests; then w4a16_bench_gpu of both, 3 rounds interleaved: 5 layers x M = 1, 2, 3, 4, 8
# x fp16 / bf16 x uint4 (the bulk kernel's token counts) and uint4b8 at M = 1 (control), every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s33c5; mkdir -p $W/out && tar -xJf .carry-s33/bins5.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for t in w4a16_test_gpu_decode w4a16_test_gpu_registry; do
  timeout 200 $W/new/$t --gtest_brief=1 > $W/out/$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/$t.log | head -6
done
SH=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up
for r in 1 2 3; do
  for v in base new; do
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1,2,3,4,8 --dtypes f16,bf16 --scalars uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/u4_${v}_$r.csv > /dev/null 2>&1
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/u4b8_${v}_$r.csv > /dev/null 2>&1
    echo "$v r$r t=$(($(date +%s)-T0))"
  done
done
for k in u4 u4b8; do
  python3 bench/gpu/ab_compare.py $W/out/${k}_base_1.csv,$W/out/${k}_base_2.csv,$W/out/${k}_base_3.csv $W/out/${k}_new_1.csv,$W/out/${k}_new_2.csv,$W/out/${k}_new_3.csv > $W/out/ab_$k.md 2>&1
  echo "== $k: $(grep -E 'rows;' $W/out/ab_$k.md); rows not ok: $(grep -c '| NO |' $W/out/ab_$k.md)"
done
grep "cuda_decode" $W/out/ab_u4.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
grep "cuda_decode" $W/out/ab_u4b8.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s (uint4b8)\n", $3, $4, $7, $8, $9, $10}'
tar -czf $OUT/call5.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
