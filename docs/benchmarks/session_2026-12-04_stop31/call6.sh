#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 6: decode at 2..4 tokens, the bulk kernel (main's default: bulk_by_default) against the
# streaming / small kernels (W4A16_DECODE_BULK=0), one binary, 3 interleaved rounds, 5 layers x fp16 / bf16 (uint4b8 g128):
# is stop 30's "llama8b.down at 3 tokens streams ~4% faster" (two separate calls) real, and where else.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c6; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins6.tar.xz -C $W/bin
B=$W/bin/w4a16_bench_gpu
ARGS=(--shapes llama8b.down,8192x8192,llama8b.gate_up,llama8b.o,llama8b.qkv --ms 2,3,4 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2 3; do
  timeout 60 $B "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "default r$r rc=$?"
  W4A16_DECODE_BULK=0 timeout 60 $B "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "bulk=0 r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv,$W/out/old_3.csv $W/out/new_1.csv,$W/out/new_2.csv,$W/out/new_3.csv > $W/out/ab.md 2>&1
cat $W/out/ab.md | head -60
tar -czf $OUT/call6.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
