#!/usr/bin/env bash
# Stop 52 call 5 (the warm H100 right after call 4, its unpacked binaries in /tmp/s52c4b): the hybrid, the prefill path and
# decode to 64 over every PERF.md shape, fp16 uint4b8, M = 1..1024.
. scripts/lib/device-env.sh; B=/tmp/s52c4b; S=/tmp/s52c5; mkdir -p $S; nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,8,9,16,32,64,256,1024 --dtypes f16 --scalars uint4b8 --csv $S/hyb_f16_uint4b8.csv > /dev/null 2> $S/err.txt || echo "rc=$?"
python3 bench/gpu/hybrid_report.py $S/hyb_f16_uint4b8.csv --markdown > $S/report.md 2>&1; sed -n '1,/^$/p' $S/report.md | tee $OUT/summary.txt; tar -czf $OUT/data.tar.gz -C $S .
