#!/usr/bin/env bash
# Stop 55 call 2 (carry .carry-s55b: prefill_bench and w4a16_test_prefill_host of the working tree after call 1): the
# interleaved rounds now rotate (round r starts at member r % n; call 1 showed the member after cuBLAS running up to 3%
# slower). The persistent loop (default) against W4A16_PREFILL_PERSIST=0 and cuBLAS fp16; config 20 split 1 again as a
# control (the default plan's kernel on five of the six layers); 2 processes, six layers x M = 1024 / 2048 / 4096.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c2; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s55b/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
$S/b/w4a16_test_prefill_host --gtest_brief=1 2>&1 | tail -3 | tee -a $OUT/gpu.txt
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=${SHAPES:-llama8b.gate_up,llama8b.qkv,8192x8192,llama8b.down,llama8b.o,llama70b.gate_up} \
  W4A16_PREFILL_TUNE_MS=${MS:-1024,2048,4096} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_INTERLEAVE=${IL:-28} W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_PERSIST=0" \
    timeout 200 $S/b/prefill_bench $S/ab_r$r.csv tune_tma > $S/ab_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
