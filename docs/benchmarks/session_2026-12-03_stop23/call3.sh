#!/usr/bin/env bash
# stop 23 call 3: main + the measured prefill plans (minus the two not reproduced) + llama8b.o's hybrid entry 8:
# every GPU test binary and the fp16 hybrid sweeps (scripts/hybrid-check), the bf16 sweeps, both paths at
# M = 4..16 on llama8b.o in uint4 (the entry's zero-point column).
T0=$(date +%s)
R=$OUT/r; mkdir -p $R/f16 $R/bf16
OUT=$R/f16 timeout 330 bash scripts/hybrid-check > $R/f16.out 2>&1; echo "f16 rc=$? t=$(($(date +%s)-T0))"
grep -vE "^\s*$" $R/f16/final.log | head -40
OUT=$R/bf16 HYBRID_DTYPE=bf16 HYBRID_SKIP_TESTS=1 timeout 180 bash scripts/hybrid-check > $R/bf16.out 2>&1; echo "bf16 rc=$? t=$(($(date +%s)-T0))"
grep -vE "^\s*$" $R/bf16/final.log | head -30
. scripts/lib/device-env.sh
timeout 60 .gpu/bin/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 \
  --shapes llama8b.o --ms 4,5,6,7,8,9,10,11,12,13,14,15,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $R/hybrid_4to16_o.csv > $R/h416.log 2>&1
echo "4..16 rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/hybrid_threshold.py $R/hybrid_4to16_o.csv 2>&1 | tail -8
tar -czf $OUT/call3_data.tar.gz -C $R .
cp $R/f16/final.log $OUT/call3_f16_final.log; cp $R/bf16/final.log $OUT/call3_bf16_final.log
echo "total $(($(date +%s)-T0)) s"
