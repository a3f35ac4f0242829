#!/usr/bin/env bash
# Session 2026-12-04 stop 34, call 1: bf16's offset-free dequantization in the bulk decode kernel ("new": 128 + q in
# every A register, 7 instructions a word against 11; the zero point leaves per unit partial as (128 + z) x the unit's
# sum of x, the sums by tensor cores once per block after x is staged) against main (264aca7). First new's decode and
# registry GPU tests (incl. the new one-signed-activation bf16 test); then w4a16_bench_gpu of both, 3 rounds
# interleaved: 5 layers x M = 1, 2, 3, 4, 8 x bf16 x uint4b8 / uint4 (default plans: the bulk kernel at 1 token and
# where bulk_by_default says), and fp16 uint4b8 at M = 1, 4 (control: the unit-sum region is reserved for both dtypes).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s34c1; mkdir -p $W/out && tar -xJf .carry-s34/bins1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for t in w4a16_test_gpu_decode w4a16_test_gpu_registry; do
  timeout 240 $W/new/$t --gtest_brief=1 > $W/out/$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E '^\[  (PASSED|FAILED)|FAILED|Failure|rel|Expected' $W/out/$t.log | head -12
done
SH=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up
for r in 1 2 3; do
  for v in base new; do
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1,2,3,4,8 --dtypes bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/bf_${v}_$r.csv > /dev/null 2>&1
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1,4 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/f16_${v}_$r.csv > /dev/null 2>&1
    echo "$v r$r t=$(($(date +%s)-T0))"
  done
done
for k in bf f16; do
  python3 bench/gpu/ab_compare.py $W/out/${k}_base_1.csv,$W/out/${k}_base_2.csv,$W/out/${k}_base_3.csv $W/out/${k}_new_1.csv,$W/out/${k}_new_2.csv,$W/out/${k}_new_3.csv > $W/out/ab_$k.md 2>&1
  echo "== $k: $(grep -E 'rows;' $W/out/ab_$k.md); rows not ok: $(grep -c '| NO |' $W/out/ab_$k.md)"
done
grep "cuda_decode" $W/out/ab_bf.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s %s\n", $3, $5, $7, $8, $9, $10, $11}'
grep "cuda_decode" $W/out/ab_f16.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s (fp16)\n", $3, $5, $7, $8, $9, $10}'
tar -czf $OUT/call1.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
