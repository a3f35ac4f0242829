#!/usr/bin/env bash
# stop 22 call 7 (branch prefill-refit: the plan's split terms refitted): the fp16 hybrid sweep and both paths at M = 4..16
H=$OUT
. scripts/lib/device-env.sh
mkdir -p .gpu && tar -xJf .carry/gpu.tar.xz -C .gpu
W=$(mktemp -d)
timeout 60 .gpu/bin/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,llama8b.o --ms 6,7,8,9,10,12,14,16 \
  --dtypes f16 --scalars uint4b8,uint4 --csv $H/call7_hybrid_6to16.csv > $W/bench.log 2>&1; echo "bench rc=$?"
python3 bench/gpu/hybrid_report.py $H/call7_hybrid_6to16.csv --markdown 2>&1 | sed -n '1,/^$/p'
HYBRID_SKIP_TESTS=1 OUT=$W/hyb timeout 110 bash scripts/hybrid-check > /dev/null 2>&1
cp $W/hyb/final.log $H/call7_hybrid_f16.log; cp $W/hyb/hybrid_f16_sym.csv $W/hyb/hybrid_f16_asym.csv $H/ 2>/dev/null
grep -v "^$" $H/call7_hybrid_f16.log | head -20
