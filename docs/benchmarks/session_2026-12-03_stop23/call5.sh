#!/usr/bin/env bash
# stop 23 call 5: tune_tma at token counts the plan was not fitted on (M = 100, 200, 512, 2048), once per reduce mode:
# held-out data for the cost model (current constants against the split-term refit) and measured plans there.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/tune; mkdir -p $W; tar -xJf .carry-tune/bins.tar.xz -C $W
for mode in kernel cluster; do
  W4A16_PREFILL_TUNE_MS=100,200,512,2048 W4A16_PREFILL_SPLIT_REDUCE=$mode timeout 250 $W/bin/prefill_bench $OUT/call5_tune_tma_$mode.csv tune_tma > $W/$mode.log 2>&1
  echo "tune $mode rc=$? rows $(($(wc -l < $OUT/call5_tune_tma_$mode.csv) - 1)) t=$(($(date +%s)-T0))"
  tail -2 $W/$mode.log
done
gzip -9 $OUT/call5_tune_tma_*.csv
