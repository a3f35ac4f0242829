#!/usr/bin/env bash
# Stop 52 call 7 (carry .carry-s52c4, the final kernels and the final table's H200 columns: the 8192x8192 entry added after
# it changes only the H100 column): the hybrid, the prefill path and decode to 64 on the six large layers, uint4, fp16 /
# bf16, M = 1..32, on the H200 that the uint4 switch of llama8b.o / qkv was set from (call 3).
. scripts/lib/device-env.sh
S=/tmp/s52c7; rm -rf $S; mkdir -p $S /tmp/s52c4b && tar -xJf .carry-s52c4/b.tar.xz -C /tmp/s52c4b; B=/tmp/s52c4b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,8,9,12,16,32 \
  --shapes 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up --dtypes f16,bf16 --scalars uint4 \
  --csv $S/hyb_uint4.csv > /dev/null 2> $S/err.txt || echo "rc=$?" | tee -a $OUT/gpu.txt
python3 bench/gpu/hybrid_report.py $S/hyb_uint4.csv --markdown > $S/report.md 2>&1; sed -n '1,/^$/p' $S/report.md | tee $OUT/summary.txt
tar -czf $OUT/data.tar.gz -C $S .
