#!/usr/bin/env bash
# Stop 60 call D (carry .carry-d60 = main's w4a16_bench_gpu + prefill_bench at the end of stop 60, stripped): the targets'
# rows on whichever card comes, meant for an H200 (issues 4 / 5 have not been measured on one since stop 51). The carry
# was repacked after the run recorded in callD_data with prefill_gpu_test and the next-item guard (main after 02a5048,
# never run on a GPU): its whole prefill_gpu_test runs first (0.).
#  0. (if the carry has it) the whole prefill_gpu_test;
#  A. issue 5's M >= 1024 rows: the default plan against cuBLAS fp16, shuffled interleaved, 11 rounds;
#  B. the hybrid (registry cuda_hybrid) and the prefill path over every PERF.md shape, fp16 uint4b8, M = 1..1024, decode
#     up to 64 and cuBLAS fp16 in the same process (issue 4's % of 4.4 TB/s, issue 6's check); bench/gpu/hybrid_report.py;
#     (B and C on an H200 only: an H100 stops after A)
#  C. (if time is left) bf16 uint4b8 and fp16 uint4 at M = 1 / 16.
set -u
. scripts/lib/device-env.sh
S=/tmp/s60d; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-d60/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
if [ -x $S/b/prefill_gpu_test ]; then
  timeout 240 $S/b/prefill_gpu_test --gtest_brief=1 > $S/test.log 2>&1
  log "prefill_gpu_test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/test.log | tr '\n' ' ')"
  grep -h "Failure" -A6 $S/test.log | head -20 | tee -a $OUT/gpu.txt
fi
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up \
  W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
  timeout 90 $S/b/prefill_bench $S/large.csv tune_tma > $S/large.log 2>&1 || log "rc=$? large"
log large
python3 scripts/prefill-ab/il_table.py $S/large.csv > $OUT/il_large.txt 2>&1
if ! grep -q H200 $OUT/gpu.txt; then tar -czf $OUT/data.tar.gz -C $S --exclude=b .; cat $OUT/il_large.txt; exit 0; fi  # B / C on an H200 only
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
timeout 150 $S/b/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,4,8,16,64,256,1024 \
  --shapes $SH --dtypes f16 --scalars uint4b8 --csv $S/hyb_f16.csv > /dev/null 2> $S/err.txt || log "rc=$? hybrid f16"
log hybrid
python3 bench/gpu/hybrid_report.py $S/hyb_f16.csv --markdown > $OUT/hybrid_f16.md 2>&1
if [ $SECONDS -lt 400 ]; then
  timeout 60 $S/b/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 1,16 --shapes $SH --dtypes bf16 --scalars uint4b8 \
    --csv $S/hyb_bf16.csv > /dev/null 2>> $S/err.txt || log "rc=$? hybrid bf16"
  timeout 60 $S/b/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 1,16 --shapes $SH --dtypes f16 --scalars uint4 \
    --csv $S/hyb_u4.csv > /dev/null 2>> $S/err.txt || log "rc=$? hybrid uint4"
  log "bf16 / uint4"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
cat $OUT/il_large.txt; sed -n '1,/^$/p' $OUT/hybrid_f16.md
