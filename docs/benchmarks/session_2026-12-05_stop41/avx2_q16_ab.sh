#!/bin/bash
# The AVX2 decode kernel (M < 17) on x in 16-bit integers (vpmaddwd) against the fp32 one before it: --isa avx2 (what an
# AVX2-only CPU runs), 3 interleaved rounds of whole processes, the 10 PERF.md shapes, uint4b8 g128.
# /tmp/bench_old: w4a16_bench_cpu of main before the change (its AVX2 kernels as f6c7078's); /tmp/bench_avx2new: after it.
# Output: label round shape M dtype isa us check (summarize_old_new.py reads it).
for r in 1 2 3; do
  for L in old new; do
    B=/tmp/bench_old; [ $L = new ] && B=/tmp/bench_avx2new
    $B --m 1,2,3,4,6,8,12,16 --dtype f16,bf16 --format uint4b8 --isa avx2 --repeats 5 --bw-mb 512 2>&1 |
      grep -v "calls/sample" | awk -F, -v L=$L -v R=$r 'NR>2 && $1=="fast_gemm"{print L,R,$2,$5,$6,$15,$9,$17}'
  done
done
