#!/usr/bin/env bash
# Stop 64 call P (the warm H100 of call O, its carry .carry-l62 already unpacked there by this command's first line):
# qwen0.5b.qkv M = 192 / 224 / 256, the default plan, the one-warpgroup 64 x 64 tile (40) at splits 2 / 3 and cuBLAS
# fp16, shuffled interleaved, 11 rounds, 2 processes.
S=/tmp/s64p; mkdir -p $S/b; . scripts/lib/device-env.sh; tar -xJf .carry-l62/b.tar.xz -C $S/b
for p in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=qwen0.5b.qkv W4A16_PREFILL_TUNE_MS=192,224,256 W4A16_PREFILL_TUNE_CONFIGS=40 \
    W4A16_PREFILL_TUNE_SPLITS=2,3 W4A16_PREFILL_INTERLEAVE=11 timeout 60 $S/b/prefill_bench $OUT/ab$p.csv tune_tma > $OUT/ab$p.log 2>&1
  python3 scripts/prefill-ab/il_table.py $OUT/ab$p.csv | tee $OUT/il_ab$p.txt
done
echo "(${SECONDS}s)"
