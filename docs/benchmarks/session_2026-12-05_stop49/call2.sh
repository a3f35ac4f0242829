#!/usr/bin/env bash
# Stop 49 call 2 (the same warm machine and carry as call 1): the row split's tails bm256 s2 / s4 and bm128_bn128 occ2 s4
# at the token counts of the 4-m-block range (M = 896, 960, 1000, 1024) on llama8b.qkv and Qwen2.5-7B qkv, the default
# plan with W4A16_PREFILL_ROW_SPLIT=0 (as on main), cuBLAS fp16 in the same process, 2 rounds. Carry .carry-s49rs.
. scripts/lib/device-env.sh
W=/tmp/s49c1/rs; [ -x $W/prefill_bench ] || { mkdir -p $W && tar -xJf .carry-s49rs/b.tar.xz -C $W; }
for r in 1 2; do
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=896,960,1000,1024 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_ROWSPLIT_HEAD=20 W4A16_PREFILL_ROWSPLIT_TAILS=20:2,20:4,32:4 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,q7b.qkv:4608:3584 \
    timeout 120 $W/prefill_bench $OUT/c2_r$r.csv tune_tma > /tmp/c2_$r.log 2>&1 || tail -3 /tmp/c2_$r.log
done
