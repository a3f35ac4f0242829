#!/usr/bin/env bash
# Stop 57 call 5 (prepared, not run; carry .carry-s57c5 = prefill_bench of main at or after the commit that added this
# script, whose row splits join the interleaved members; stripped, XZ_OPT="-9e -T2"):
# the no-kernel-change candidate for llama70b.gate_up M = 193..256 (448 tiles = 3 waves + 52): a row split of the
# same decomposition as its default split tail (config 20 split 1 over the 3 full waves' rows: 396 tiles, the
# persistent loop with no tail; the last 52 tiles' rows at config 20 split 2 / 3 / 4 in clusters, a second launch),
# against the default plan (the split tail) and cuBLAS fp16, shuffled interleaved, clock probe on, 2 processes.
set -u
. scripts/lib/device-env.sh
S=/tmp/s57c5; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s57c5/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=200,256 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_ROWSPLIT_HEAD=20 W4A16_PREFILL_ROWSPLIT_TAILS=20:2,20:3,20:4 W4A16_PREFILL_INTERLEAVE=16 \
    timeout 120 $S/b/prefill_bench $S/rs_r$r.csv tune_tma > $S/rs_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/rs_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
