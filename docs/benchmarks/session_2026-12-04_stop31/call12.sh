#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 12: the large layers at 4..6 tokens, main's default (the streaming kernel's split
# plans there) against the bulk kernel (W4A16_DECODE_BULK=1, its automatic plan), one binary, fp16 / bf16 uint4b8 g128,
# 3 interleaved rounds, every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c12; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins12.tar.xz -C $W/bin
B=$W/bin/w4a16_bench_gpu
ARGS=(--shapes 8192x8192,llama8b.o,llama8b.gate_up,llama8b.down,llama8b.qkv --ms 4,5,6 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2 3; do
  timeout 60 $B "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1
  W4A16_DECODE_BULK=1 timeout 60 $B "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv,$W/out/old_3.csv $W/out/new_1.csv,$W/out/new_2.csv,$W/out/new_3.csv > $W/out/ab.md 2>&1
cat $W/out/ab.md | cut -c1-120
tar -czf $OUT/call12.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
