#!/usr/bin/env bash
# Stop 75 call 3 (carry .carry-l74b, as stop 74's call4.sh): stop 74's call 4 whole, then qwen0.5b.down at 12..16 tokens
# with the one-stripe bulk plan forced (W4A16_DECODE_BULK_PLAN=1,1: 56 blocks, 2 stages at 16 tokens, x slots of 64 KB)
# against the default (2 stripes on 28 blocks, 4 stages): does the cost model's short-ring penalty, which counts only
# weight bytes in flight, cost the 16-token plan? fp16 / bf16 x both scalar types, 2 interleaved rounds.
set -u
bash docs/benchmarks/session_2026-12-07_stop74/call4.sh
S=/tmp/s74d
Q="--shapes qwen0.5b.down --ms 12,13,14,15,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  timeout 30 $S/b/w4a16_bench_gpu $Q --csv $S/r/QN_$r.csv > /dev/null 2>&1; echo "QN $r rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
  W4A16_DECODE_BULK_PLAN=1,1 timeout 30 $S/b/w4a16_bench_gpu $Q --csv $S/r/QF_$r.csv > /dev/null 2>&1
  echo "QF $r rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
echo "### qwen0.5b.down: old: default (QN), new: one stripe forced (QF)" >> $OUT/ab.md
python3 bench/gpu/ab_compare.py $S/r/QN_1.csv,$S/r/QN_2.csv $S/r/QF_1.csv,$S/r/QF_2.csv >> $OUT/ab.md 2>&1
grep "rows; old" $OUT/ab.md | tail -1
tar -czf $OUT/r.tar.gz -C $S r
