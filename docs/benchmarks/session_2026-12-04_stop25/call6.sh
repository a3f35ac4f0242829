#!/usr/bin/env bash
# Session 2026-12-04 call 6 (main 895b39b, data for the next session): tune_tma of the 192-token tile against the
# planned tiles (a) on the Qwen2.5-0.5B shapes at M = 160..768, (b) on four large shapes at M = 1152 / 1344
# (6 / 7 blocks of 192 against 5 / 6 of 256), cluster reduce; default plan and cuBLAS fp16 in the same run.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins6.tar.xz -C $W
export W4A16_PREFILL_TUNE_CONFIGS=28,20,22,23,32
W4A16_PREFILL_TUNE_MS=160,320,384,576,768 W4A16_PREFILL_TUNE_SHAPES=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down \
  timeout 120 $W/c6/prefill_bench $OUT/call6_tune_qwen.csv tune_tma > /dev/null 2>&1
echo "tune qwen rc=$? t=$(($(date +%s)-T0))"
W4A16_PREFILL_TUNE_MS=1152,1344 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.qkv,llama8b.down \
  timeout 200 $W/c6/prefill_bench $OUT/call6_tune_large.csv tune_tma > /dev/null 2>&1
echo "tune large rc=$? t=$(($(date +%s)-T0))"
for f in qwen large; do python3 .carry-s25/tune_best.py $OUT/call6_tune_$f.csv; gzip -9 $OUT/call6_tune_$f.csv; done
echo "total $(($(date +%s)-T0)) s"
