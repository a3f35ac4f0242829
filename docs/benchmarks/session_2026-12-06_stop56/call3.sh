#!/usr/bin/env bash
# Stop 56 call 3 (carry .carry-s56c2, prefill_bench of main 30bd9e2): llama70b.gate_up at M = 160..256 (448 tiles of
# bm256 = 3 waves + 52 on 132 SMs: the split tail's case) and 4096 (54 waves + 40): config 20 split 1 (persistent,
# split tail) against the default plan (bm192 s2 cluster at 129..192, bm256 s2 cluster at 193..256) and cuBLAS fp16,
# shuffled interleaved, clock probe on; then the same sequential-only (no INTERLEAVE) for the clocks of each alone.
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c3; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56c2/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=160,192,224,256,4096 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=24 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TAIL_SPLIT=0" \
    timeout 150 $S/b/prefill_bench $S/ab_r$r.csv tune_tma > $S/ab_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
grep -h "^clock" $S/ab_r1.log | tee -a $OUT/gpu.txt
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
