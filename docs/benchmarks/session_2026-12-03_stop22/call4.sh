#!/usr/bin/env bash
# stop 22 call 4: both hybrid paths at every M = 4..16 on the layers whose M = 16 / 8 crossover moved (prefill-edge build)
H=$OUT
. scripts/lib/device-env.sh
mkdir -p /tmp/g && tar -xJf .carry-hyb/gpu.tar.xz -C /tmp/g
timeout 280 /tmp/g/bin/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.o,llama8b.down --ms 4,5,6,7,8,9,10,11,12,13,14,15,16 \
  --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $H/call4_hybrid_4to16.csv > $H/call4.log 2>&1; echo "bench rc=$?"
python3 bench/gpu/hybrid_report.py $H/call4_hybrid_4to16.csv --markdown > $H/call4_report.md 2>&1
sed -n '1,/^$/p' $H/call4_report.md
