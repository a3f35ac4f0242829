#!/usr/bin/env bash
# Prepared for the next device call (not run in stop 49): row-split candidates beyond the two entries, where the bm256
# grid ends in a part wave of <= 0.6 (tiles of 128 rows x 256 tokens over 132 SMs): llama8b.o / down M = 1536 (1.45
# waves), 8192x8192 M = 768 (1.45), Llama-70B qkv (10240 x 8192) M = 1024 (2.42), Qwen2.5-7B o / down M = 1536 (1.27),
# Qwen2.5-0.5B gate_up M = 1024 / 1536 (2.30 / 3.45). The default (W4A16_PREFILL_ROW_SPLIT=0, as before the entries) against
# the bm256 head over its full waves + tails bm256 s2 / s4, bm128_bn128 occ2 s2 / s4, cuBLAS fp16 in the same process,
# 2 rounds; a tail that wins by > 3% at both rounds is an entry candidate (then an A/B of the entry as call3.sh does).
# Carry .carry-s49rs from `bash prepare.sh` (HEAD).
. scripts/lib/device-env.sh
W=/tmp/s49c4; rm -rf $W; mkdir -p $W && tar -xJf .carry-s49rs/b.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
T="20:2,20:4,32:2,32:4"
for r in 1 2; do
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=1536 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_ROWSPLIT_HEAD=20 \
  W4A16_PREFILL_ROWSPLIT_TAILS=$T W4A16_PREFILL_TUNE_SHAPES=llama8b.o,llama8b.down,q7b.o:3584:3584,q7b.down:3584:18944,qwen0.5b.gate_up \
    timeout 150 $W/prefill_bench $OUT/c4a_r$r.csv tune_tma > $W/a$r.log 2>&1 || tail -3 $W/a$r.log
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=768,1024 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_ROWSPLIT_HEAD=20 \
  W4A16_PREFILL_ROWSPLIT_TAILS=$T W4A16_PREFILL_TUNE_SHAPES=8192x8192,l70b.qkv:10240:8192,qwen0.5b.gate_up \
    timeout 150 $W/prefill_bench $OUT/c4b_r$r.csv tune_tma > $W/b$r.log 2>&1 || tail -3 $W/b$r.log
done
