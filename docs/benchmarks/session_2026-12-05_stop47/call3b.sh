#!/usr/bin/env bash
# Stop 47, call 3b (H200, the machine of call 3 still warm, its /tmp/s47c3 binaries): both paths and the hybrid at
# M = 8..16 on llama8b.o / llama8b.down (the hybrid check's misses at M = 16), fp16 / bf16 x uint4b8 / uint4, 2 rounds,
# every row against f64. Run as one command line of the device tool:
. scripts/lib/device-env.sh; W=/tmp/s47c3; O=$OUT
for r in 1 2; do
  timeout 100 $W/new/w4a16_bench_gpu --registry cuda_decode,cuda_prefill,cuda_hybrid --shapes llama8b.o,llama8b.down \
    --ms 8,9,10,11,12,14,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 \
    --csv $O/sw_$r.csv > $O/sw_$r.log 2>&1 || echo rc=$?
done
