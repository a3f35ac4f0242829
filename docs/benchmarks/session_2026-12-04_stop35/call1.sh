#!/usr/bin/env bash
# Session 2026-12-04 stop 35, call 1 (PREPARED, NOT RUN: no device was lent in stop 35). Carry .carry-s35 (bins1.tar.xz,
# sm_90a, stripped: base = main 6fd6703 (w4a16_bench_moe, w4a16_test_gpu_moe, w4a16_bench_gpu, w4a16_test_gpu_decode);
# newa = branch moe-b8-pairs ef463ac (the MoE pair): bench_moe + test_moe; newb = branch bulk-b8-pairs b463bc8: bench_gpu +
# test_gpu_decode). Both candidates give uint4b8 the tile-pair variant with two accumulator chains per partial, as uint4
# has (one scale entry per tile pair: half the scale copies and FFMAs; 2 partials x 2 chains = 4 chains, as before):
#   A: the MoE ring (only the 8 uint4b8 kGs-1 ring kernels differ from base; uint4b8 g = 64 to the half-tile variant);
#   B: the bulk decode kernel (4 new kernels; every existing kernel SASS-identical; uint4b8 g >= 128 at even K_pad / 64).
# Tests of each new build first; then whole processes, rounds interleaved: MoE fp16 / bf16 x uint4b8 (the A/B) / uint4
# (controls) at T = 4, 16, 64, 3 rounds; bulk decode fp16 / bf16 x uint4b8 at M = 1, 2, 4, 8 on 3 layers, 3 rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s35c1; mkdir -p $W/out && tar -xJf .carry-s35/bins1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/newa/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1 &
timeout 200 $W/newb/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*:Decode.EveryConfigurationM1To16:Decode.Bf16OneSignedActivations' > $W/out/test_decode.log 2>&1 &
wait
for t in moe decode; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_$t.log | head -8; done
for kind in f16:uint4b8 bf16:uint4b8 f16:uint4 bf16:uint4; do
  act=${kind%%:*} st=${kind#*:}
  bash scripts/moe-ab $W/out/moe_${act}${st} 3 4,16,64 $act $st base=$W/base/w4a16_bench_moe new=$W/newa/w4a16_bench_moe \
    > $W/out/ab_moe_${act}${st}.md 2>&1
  echo "== MoE $act $st t=$(($(date +%s)-T0))"; grep -v "round .* done" $W/out/ab_moe_${act}${st}.md
done
SH=8192x8192,llama8b.down,llama70b.gate_up
for r in 1 2 3; do
  for v in base newb; do
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1,2,4,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 16 --csv $W/out/dec_${v}_$r.csv > /dev/null 2>&1
  done
  echo "decode round $r t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/dec_base_1.csv,$W/out/dec_base_2.csv,$W/out/dec_base_3.csv \
  $W/out/dec_newb_1.csv,$W/out/dec_newb_2.csv,$W/out/dec_newb_3.csv > $W/out/ab_dec.md 2>&1
echo "== decode: $(grep -E 'rows;' $W/out/ab_dec.md); rows not ok: $(grep -c '| NO |' $W/out/ab_dec.md)"
grep "cuda_decode" $W/out/ab_dec.md | awk -F'|' '{printf "%-17s %-9s %-8s M=%-2s %8s %8s %s\n", $3, $4, $5, $7, $8, $9, $10}'
tar -czf $OUT/call1.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
