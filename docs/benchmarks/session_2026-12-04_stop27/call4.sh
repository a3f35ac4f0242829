#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 4: the measured entries of call 3's tune (prefill.cu kMeasuredPrefillPlans, "stop 27")
# against the build before them (bins3's prefill_dq_ab): prefill_dq_ab bench at the entries' measured M and points inside
# their ranges, 3 interleaved rounds (scripts/prefill-ab/points_ab.sh); then the registry's hybrid rows at those points,
# fp16 / bf16 x uint4b8 / uint4, every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins4.tar.xz -C $W
bash scripts/prefill-ab/points_ab.sh "$W/old/prefill_dq_ab" "$W/new/prefill_dq_ab" .carry-s27/points4.txt $W/ab 3 | tee $OUT/call4_table_ab.txt
echo "ab t=$(($(date +%s)-T0))"
tar -czf $OUT/call4_ab.tar.gz -C $W ab
timeout 150 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 --no-cublas \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.o --ms 1536,2048,2560,3072,3600,4096 \
  --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/call4_registry_check.csv > $OUT/call4_registry_check.log 2>&1
echo "registry check rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call4_registry_check.log
gzip -9 $OUT/call4_registry_check.csv
echo "total $(($(date +%s)-T0)) s"
