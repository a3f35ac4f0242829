#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 11: the session's decode changes together (main with the aligned streaming rings and the
# widened bulk default) against the session's start (5c18a46), both defaults, 10 PERF.md shapes x M = 1..8 x fp16 / bf16
# (uint4b8 g128), 2 rounds interleaved.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c11; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins11.tar.xz -C .gpu/bin
B=.gpu/bin
ARGS=(--ms 1,2,3,4,5,6,7,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  timeout 60 $B/w4a16_bench_gpu_old "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  timeout 60 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv $W/out/new_1.csv,$W/out/new_2.csv > $W/out/ab.md 2>&1; tail -1 $W/out/ab.md
tar -czf $OUT/call11.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
