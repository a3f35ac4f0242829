#!/usr/bin/env bash
# Stop 59 call 3 (carry .carry-m59, its m/ = main bf9876e's prefill_bench): call 1's rows again in a second process
# (fp16, the M >= 1024 part and the mid-M part), then the M >= 1024 part in bf16 (against cuBLAS bf16 and fp16).
set -u
. scripts/lib/device-env.sh
S=/tmp/s59c3; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-m59/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
run() {  # name shapes ms timeout [extra env]
  env $5 W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
    timeout $4 $S/b/m/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || echo "rc=$? $1" | tee -a $OUT/gpu.txt
  echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt
}
L=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
run large2 $L 1024,4096 220 W4A16_PREFILL_TUNE_DTYPE=f16
run mid2 qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up 32,64,128,256 220 W4A16_PREFILL_TUNE_DTYPE=f16
run large_bf16 $L 1024,4096 220 W4A16_PREFILL_TUNE_DTYPE=bf16
for f in large2 mid2 large_bf16; do python3 scripts/prefill-ab/il_table.py $S/$f.csv | tee $OUT/il_$f.txt; done
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
