#!/bin/bash
# The CPU MoE layer with W4A16_CPU_ISA=avx2 (what an AVX2-only CPU runs: no AMX, no AVX-512): the 16-bit pairs' row
# kernel on AVX2 (new) against the fp32 row kernels (old: w4a16_bench_moe_cpu of f6c7078), 3 interleaved rounds of whole
# processes, Qwen3-30B-A3B shapes, fp16 uint4b8 g128, top 8.
for r in 1 2 3; do
  for L in old new; do
    echo "$L round $r"
    W4A16_CPU_ISA=avx2 /tmp/moe_$L 2 1,4,16,64,256 5 2>&1 | grep "^T="
  done
done
