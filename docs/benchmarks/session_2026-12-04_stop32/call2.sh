#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 2: the stage breakdown of the MoE decode paths (call 1's diagnostic definition did
# not reach the kernels: a directory-scoped source property). a = main built with -DW4A16_DIAG_MOE_STAGES=ON: rows
# stages1 (GEMM 1 alone), stages2 (GEMM 1 + GEMM 2), chosen (+ the reduce); fp16 uint4b8, T = 1, 4, 16, 64, 2 rounds;
# then one process with every row at T = 1, 4 (old kernel, round robin, deep ring).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c2; mkdir -p $W/out && tar -xJf .carry-s32/bins2.tar.xz -C $W
for r in 1 2; do
  W4A16_BENCH_MOE_PATHS=chosen timeout 60 $W/a/w4a16_bench_moe $W/out/f16_a_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null
  echo "r$r rc=$? t=$(($(date +%s)-T0))"
done
timeout 90 $W/a/w4a16_bench_moe $W/out/all_a_r1.csv 1,4 f16 uint4b8 > /dev/null; echo "all rc=$? t=$(($(date +%s)-T0))"
cd $W/out && for f in *.csv; do echo "== $f"; cut -d, -f1-3,6,9 $f; done
tar -czf $OUT/call2.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
