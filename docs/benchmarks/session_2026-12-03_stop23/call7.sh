#!/usr/bin/env bash
# stop 23 call 7: main 1d6b2d4 (refitted split terms + the regenerated measured table) through the registry:
# the fp16 hybrid sweeps of scripts/hybrid-check (uint4b8 M = 1..4096, uint4 M = 1..1024), every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
mkdir -p /tmp/g && tar -xJf .carry/gpu.tar.xz -C /tmp/g
for sc in "uint4b8 1,2,4,8,16,32,64,128,256,1024,4096 sym" "uint4 1,4,16,32,64,128,256,1024 asym"; do
  set -- $sc
  timeout 80 /tmp/g/bin/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms $2 \
    --dtypes f16 --scalars $1 --csv $OUT/call7_hybrid_f16_$3.csv > /dev/null 2>&1; echo "$1 rc=$? t=$(($(date +%s)-T0))"
  python3 bench/gpu/hybrid_report.py $OUT/call7_hybrid_f16_$3.csv --markdown > $OUT/call7_hybrid_f16_$3_report.md 2>&1
  sed -n '1,/^$/p' $OUT/call7_hybrid_f16_$3_report.md
done
