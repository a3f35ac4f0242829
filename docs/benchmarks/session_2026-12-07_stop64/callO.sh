#!/usr/bin/env bash
# Stop 64 call O (carry .carry-l62 = main f88a17b's prefill_bench, stripped, xz; the prefill code is unchanged since).
# On an H200: stop 63's call N (the tile-39 A/B, issue 5's rows, the M = 128 / 192 tune), within ~250 s.
# On another card (an H100 stood in for it in stops 48-63): a tune of every tile and split at M = 256 on the two
# layers below cuBLAS fp16 there in stop 63 (llama70b.gate_up 0.988, qwen0.5b.qkv 0.980), 7 rounds interleaved.
set -u
. scripts/lib/device-env.sh
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  S=/tmp/s64o; rm -rf $S; mkdir -p $S/b
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
  tar -xJf ${CARRY:-.carry-l62}/b.tar.xz -C $S/b
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up,qwen0.5b.qkv W4A16_PREFILL_TUNE_MS=256 \
    W4A16_PREFILL_TUNE_SPLITS=1,2,3,4 W4A16_PREFILL_INTERLEAVE=7 timeout 120 $S/b/prefill_bench $S/tune256.csv tune_tma \
    > $S/tune256.log 2>&1 || echo "rc=$? tune256 (${SECONDS}s)" | tee -a $OUT/gpu.txt
  python3 scripts/prefill-ab/il_table.py $S/tune256.csv > $OUT/il_tune256.txt 2>&1
  tar -czf $OUT/data.tar.gz -C $S --exclude=b .
  echo "== tune256 (${SECONDS}s)"; cat $OUT/il_tune256.txt
  exit 0
fi
bash docs/benchmarks/session_2026-12-06_stop63/callN.sh
