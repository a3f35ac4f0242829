#!/bin/bash
# best of old main vs new, interleaved rounds, all PERF.md shapes, M = 1..8
for r in 1 2 3; do  # bench_old: w4a16_bench_cpu of f6c7078 (a worktree, CUDA off); bench_new: this stop's
  for L in old new; do
    /tmp/bench_$L --m 1,2,3,4,5,6,8 --dtype f16,bf16 --format uint4b8 --isa best --repeats 5 --bw-mb 512 2>&1 | grep -v "calls/sample" | awk -F, -v L=$L -v R=$r 'NR>2 && $1=="fast_gemm"{print L,R,$2,$5,$6,$15,$9,$17}'
  done
done
