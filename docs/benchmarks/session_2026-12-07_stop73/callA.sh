#!/usr/bin/env bash
# Stop 73 call A: stop 72's prepared callC (same carries: .carry-l72p, .carry-l71e; see its header), then
#  3. llama8b.down uint4 at g = 32, where the decode plan runs the streaming kernel (the bulk rule leaves g = 32 out):
#     the decode path against the prefill path at 8..16 tokens, which the hybrid's g = 32 switch point on H100-class
#     memory (8 since stop 73) rests on. Any card.
set -u
bash docs/benchmarks/session_2026-12-07_stop72/callC.sh
timeout 60 /tmp/s72c/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --no-cublas --shapes llama8b.down --ms 8,9,12,16 \
  --dtypes f16,bf16 --scalars uint4 --groups 32 --no-extra-groups --csv $OUT/down_g32.csv > $OUT/down_g32.log 2>&1
echo "down g32 rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
grep -E "llama8b.down" $OUT/down_g32.log | awk '{print $1, $2, $4, $5, $6, $8, $9}' | head -20
