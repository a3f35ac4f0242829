#!/bin/bash
# `best` of the stop's start (f6c7078: /tmp/bench_old, its w4a16_bench_cpu built in a worktree with CUDA off) against its
# end (/tmp/bench_new), 3 interleaved rounds of whole processes, the 10 PERF.md shapes, uint4b8 g128.
# Output: label round shape M dtype isa us check (summarize_old_new.py reads it).
for r in 1 2 3; do
  for L in old new; do
    /tmp/bench_$L --m 1,2,3,4,6,8,16,64,256 --dtype f16,bf16 --format uint4b8 --isa best --repeats 5 --bw-mb 512 2>&1 |
      grep -v "calls/sample" | awk -F, -v L=$L -v R=$r 'NR>2 && $1=="fast_gemm"{print L,R,$2,$5,$6,$15,$9,$17}'
  done
done
