#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 3: tune_tma (every planned TMA tile x split 1..8, fp16 uint4b8 g128, cuBLAS fp16 in
# the same run) on the four Qwen2.5-0.5B layers and llama8b.qkv / o at M = 1024..4096, where the plan has no measured
# entry above 1024 and the model's tile pads its waves (qwen0.5b.qkv M = 4096: 144 bm256 tiles on 132 SMs, 24.6 us
# against 12.5 at M = 3072).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins3.tar.xz -C $W
W4A16_PREFILL_TUNE_MS=1024,1536,2048,2560,3072,4096 \
W4A16_PREFILL_TUNE_SHAPES=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.o,llama8b.qkv \
  timeout 480 $W/new/prefill_bench $OUT/call3_tune.csv tune_tma > $OUT/call3_tune.log 2>&1
echo "tune rc=$? t=$(($(date +%s)-T0))"
python3 scripts/prefill-ab/tune_best.py $OUT/call3_tune.csv | tee $OUT/call3_tune_best.txt
gzip -9 $OUT/call3_tune.csv $OUT/call3_tune.log
echo "total $(($(date +%s)-T0)) s"
