#!/usr/bin/env bash
# Call 6: the 2-CTA bm128_bn128 tile (config 32) against the other tiles on the shapes call 2 left out
# (llama8b.gate_up, llama8b.down, llama70b.gate_up) at M = 100, 128, 200, 256, per reduce mode (main e30a1b2).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W
tar -xJf .carry-bn256/bins6.tar.xz -C $W
export W4A16_PREFILL_TUNE_CONFIGS=32,23,22,20,15
export W4A16_PREFILL_TUNE_MS=100,128,200,256
export W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up,llama8b.down,llama70b.gate_up
for mode in cluster kernel; do
  W4A16_PREFILL_SPLIT_REDUCE=$mode timeout 150 $W/bin/prefill_bench $OUT/call6_tune_$mode.csv tune_tma > $W/tune_$mode.log 2>&1
  echo "tune $mode rc=$? t=$(($(date +%s)-T0)) rows=$(wc -l < $OUT/call6_tune_$mode.csv)"
done
echo "total $(($(date +%s)-T0)) s"
