#!/bin/bash
# The AMX kernel with float16 x on the INT8 tiles (W4A16_CPU_AMX_INT8=1, the default) against the bf16 hi + lo pair (=0),
# 3 interleaved rounds of whole processes, the 10 PERF.md shapes, fp16 uint4b8 g128; the VNNI kernel once per round
# (the crossover). Output: variant round shape M us check.
B=${B:-build/bench/cpu/w4a16_bench_cpu}
for r in 1 2 3; do
  for v in pair int8 vnni; do
    case $v in pair) e=0; isa=amx;; int8) e=1; isa=amx;; vnni) e=1; isa=vnni;; esac
    W4A16_CPU_AMX_INT8=$e $B --m ${MS:-4,5,6,8,12,16,32,64,256} --dtype f16 --format uint4b8 --isa $isa --repeats 5 --bw-mb 512 2>&1 |
      grep -v "calls/sample" | awk -F, -v L=$v -v R=$r 'NR>2 && $1=="fast_gemm"{print L,R,$2,$5,$9,$17}'
  done
done
