#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 3: is the MoE ring kernel bound by its copies or by its math? Two timing-only builds
# of main (db0bb64, -DW4A16_DIAG_MOE_STAGES=ON): nomath = the ring's compute step returns at once
# (diag_ring_no_math.patch: the copies stream, no dequantization / mma), nocopy = issue_w / issue_x return at once
# (diag_ring_no_copy.patch: the math runs on stale shared memory, no weight or x bytes read). Rows stages1 / stages2 /
# chosen as in call 2 (main's own: call 2). fp16 uint4b8, T = 1, 4, 16, 64, two rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c3; mkdir -p $W/out && tar -xJf .carry-s32/bins3.tar.xz -C $W
for r in 1 2; do
  for v in nomath nocopy; do
    W4A16_BENCH_MOE_PATHS=chosen timeout 60 $W/$v/w4a16_bench_moe $W/out/f16_${v}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null
    echo "$v r$r rc=$? t=$(($(date +%s)-T0))"
  done
done
cd $W/out && for f in *.csv; do echo "== $f"; cut -d, -f1-3,6 $f | tr '\n' ' '; echo; done
tar -czf $OUT/call3.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
