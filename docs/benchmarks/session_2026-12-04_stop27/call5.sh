#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 5: tune_tma (fp16 uint4b8 g128, cuBLAS fp16 in the same run) (a) on the five large
# PERF.md layers below llama70b at token counts between the measured ones (M = 300 / 520 / 700 / 1030: stop 26 had them at
# 0.72-0.93x cuBLAS), splits 1..4; (b) on four Qwen2.5-7B layers (no measured entry: the model's plans) at M = 512 / 1024 /
# 4096, splits 1..3.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins5.tar.xz -C $W
W4A16_PREFILL_TUNE_MS=300,520,700,1030 W4A16_PREFILL_TUNE_SPLITS=1,2,3,4 \
W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o \
  timeout 270 $W/new/prefill_bench $OUT/call5_tune_perf.csv tune_tma > $OUT/call5_tune_perf.log 2>&1
echo "tune perf rc=$? t=$(($(date +%s)-T0))"
W4A16_PREFILL_TUNE_MS=512,1024,4096 W4A16_PREFILL_TUNE_SPLITS=1,2,3 \
W4A16_PREFILL_TUNE_SHAPES=q7b.qkv:4608:3584,q7b.o:3584:3584,q7b.down:3584:18944,q7b.gate_up:37888:3584 \
  timeout 270 $W/new/prefill_bench $OUT/call5_tune_q7b.csv tune_tma > $OUT/call5_tune_q7b.log 2>&1
echo "tune q7b rc=$? t=$(($(date +%s)-T0))"
for f in perf q7b; do python3 scripts/prefill-ab/tune_best.py $OUT/call5_tune_$f.csv | tee $OUT/call5_tune_${f}_best.txt; done
gzip -9 $OUT/call5_tune_*.csv $OUT/call5_tune_*.log
echo "total $(($(date +%s)-T0)) s"
