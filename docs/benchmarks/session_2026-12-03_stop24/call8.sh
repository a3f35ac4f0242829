#!/usr/bin/env bash
# Call 8: is the 2-CTA bm128_bn128 tile's slowdown at partly filled m blocks its own (4 stages, 2 CTAs per SM)
# or any 128-token tile's? tune_tma split 1 only (kernel mode) of configs 32 (bm128 occ2, 4 stages), 15 (bm128_bn128,
# 8 stages, 1 CTA), 22 (bm128_bn256, 6 stages, 1 CTA), 23 (bm64 occ2, 6 stages) at M = 65, 72, 96, 128 (main).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W
tar -xJf .carry-bn256/bins8.tar.xz -C $W
W4A16_PREFILL_TUNE_CONFIGS=32,15,22,23 W4A16_PREFILL_TUNE_MS=65,72,96,128 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up,llama8b.gate_up,8192x8192 \
  W4A16_PREFILL_SPLIT_REDUCE=kernel timeout 150 $W/bin/prefill_bench $OUT/call8_tune.csv tune_tma > $W/t.log 2>&1
echo "tune rc=$? t=$(($(date +%s)-T0))"
grep -E ":s1," $OUT/call8_tune.csv | cut -d, -f1,2,5,10 | sed 's/cuda_prefill://'
echo "total $(($(date +%s)-T0)) s"
