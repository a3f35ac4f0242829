#!/usr/bin/env bash
# Session 2026-12-04 stop 33, call 6: the streaming decode kernel's pair variant ("new": uint4 with g >= 128 or
# channelwise where every warp's tile range is even: one scale / zero entry per tile pair copied and read, one fp32
# partial per pair) against main bb36ee0 (the bulk kernel's pair variant). First new's decode GPU tests; then
# w4a16_bench_gpu of both, 3 rounds interleaved: 5 layers x M = 2, 4, 8, 12, 16 x fp16 / bf16 x uint4, and uint4b8 at
# M = 4, 16 (control), every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s33c6; mkdir -p $W/out && tar -xJf .carry-s33/bins6.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/new/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1; echo "decode tests rc=$? t=$(($(date +%s)-T0))"
grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_decode.log | head -6
SH=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up
for r in 1 2 3; do
  for v in base new; do
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 2,4,8,12,16 --dtypes f16,bf16 --scalars uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/u4_${v}_$r.csv > /dev/null 2>&1
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 4,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/u4b8_${v}_$r.csv > /dev/null 2>&1
    echo "$v r$r t=$(($(date +%s)-T0))"
  done
done
for k in u4 u4b8; do
  python3 bench/gpu/ab_compare.py $W/out/${k}_base_1.csv,$W/out/${k}_base_2.csv,$W/out/${k}_base_3.csv $W/out/${k}_new_1.csv,$W/out/${k}_new_2.csv,$W/out/${k}_new_3.csv > $W/out/ab_$k.md 2>&1
  echo "== $k: $(grep -E 'rows;' $W/out/ab_$k.md); rows not ok: $(grep -c '| NO |' $W/out/ab_$k.md)"
done
grep "cuda_decode" $W/out/ab_u4.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
tar -czf $OUT/call6.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
