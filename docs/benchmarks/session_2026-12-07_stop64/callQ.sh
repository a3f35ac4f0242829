#!/usr/bin/env bash
# Stop 64 call Q (the same warm H100, after call P): llama70b.gate_up M = 200 / 232 / 256, the default plan (the row
# split of kMeasuredRowSplits) against bm256 (20) split 1 and cuBLAS fp16, shuffled interleaved, 7 rounds, 2 processes.
S=/tmp/s64p; . scripts/lib/device-env.sh
for p in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=200,232,256 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=7 timeout 80 $S/b/prefill_bench $OUT/ac$p.csv tune_tma > $OUT/ac$p.log 2>&1
  python3 scripts/prefill-ab/il_table.py $OUT/ac$p.csv | tee $OUT/il_ac$p.txt
done
grep -i "plan\|split" $OUT/ac1.log | head -5; echo "(${SECONDS}s)"
