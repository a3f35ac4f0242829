#!/usr/bin/env bash
# Stop 52 call 4 (carry .carry-s52c4: this commit's w4a16_test_gpu_registry and w4a16_bench_gpu): the final table as the
# hybrid. Registry GPU tests; the hybrid (registry cuda_hybrid), the prefill path and decode to 64 over every PERF.md shape,
# fp16 uint4 at M = 1..1024, cuBLAS fp16 in the same process; bf16 uint4 at M = 8 / 9 / 16 on the two layers that moved.
. scripts/lib/device-env.sh
S=/tmp/s52c4; rm -rf $S; mkdir -p $S /tmp/s52c4b && tar -xJf .carry-s52c4/b.tar.xz -C /tmp/s52c4b; B=/tmp/s52c4b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 120 $B/w4a16_test_gpu_registry > $S/registry.log 2>&1; echo "registry rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/registry.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
timeout 200 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,8,9,12,16,32,64,256,1024 \
  --dtypes f16 --scalars uint4 --csv $S/hyb_f16_uint4.csv > /dev/null 2> $S/err.txt || echo "rc=$? f16" | tee -a $OUT/gpu.txt
tar -czf $OUT/data.tar.gz -C $S .
timeout 60 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 8,9,16 \
  --shapes llama8b.o,llama8b.qkv --dtypes bf16 --scalars uint4 --csv $S/hyb_bf16_uint4.csv > /dev/null 2>> $S/err.txt || echo "rc=$? bf16" | tee -a $OUT/gpu.txt
for f in f16 bf16; do python3 bench/gpu/hybrid_report.py $S/hyb_${f}_uint4.csv --markdown > $S/report_$f.md 2>&1; sed -n '1,/^$/p' $S/report_$f.md | tee -a $OUT/summary.txt; done
tar -czf $OUT/data.tar.gz -C $S .
