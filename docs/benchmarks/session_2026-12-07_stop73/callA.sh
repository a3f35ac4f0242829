#!/usr/bin/env bash
# Stop 73 call A (carries .carry-l72p, .carry-l71e: see stop 72's callC.sh header). Any card.
#  0. llama8b.down uint4 at g = 32, where the decode plan runs the streaming kernel (the bulk rule leaves g = 32 out):
#     the decode path against the prefill path at 8..16 tokens, which the hybrid's g = 32 switch point on H100-class
#     memory (8 since stop 73) rests on. First, as it is short (callC ends with issue 5's rows on an H200).
#  1-2 (and issue 5's rows on an H200): stop 72's prepared callC, unchanged.
set -u
. scripts/lib/device-env.sh
mkdir -p /tmp/s73a && tar -xJf .carry-l72p/p.tar.xz -C /tmp/s73a
timeout 60 /tmp/s73a/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --no-cublas --shapes llama8b.down --ms 8,9,12,16 \
  --dtypes f16,bf16 --scalars uint4 --groups 32 --no-extra-groups --csv $OUT/down_g32.csv > $OUT/down_g32.log 2>&1
echo "down g32 rc=$? (${SECONDS}s)" | tee $OUT/g32.txt
grep -E "llama8b.down" $OUT/down_g32.log | awk '{print $1, $2, $4, $5, $6, $8, $9}' | head -20
bash docs/benchmarks/session_2026-12-07_stop72/callC.sh
