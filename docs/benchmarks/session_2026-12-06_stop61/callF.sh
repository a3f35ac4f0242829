#!/usr/bin/env bash
# Stop 61 call F (carries .carry-d60 = main e678115's w4a16_bench_gpu + prefill_bench, .carry-e61 = its w4a16_bench_moe;
# stripped, xz): the targets' rows on an H200 only (calls D / E ran this build's tests and rows on an H100). On any
# other card it runs the decode GPU test whole and stops. By priority, each step under its own timeout:
#  1. issue 5's M >= 1024 rows, fp16: the default plan against cuBLAS fp16, shuffled interleaved, 11 rounds;
#  2. the hybrid (registry cuda_hybrid) and the prefill path over every PERF.md shape, fp16 uint4b8, M = 1..1024, decode
#     up to 64 and cuBLAS fp16 in the same process (issue 4's % of 4.4 TB/s); bench/gpu/hybrid_report.py;
#  3. issue 7's rows: w4a16_bench_moe fp16 uint4b8, T = 1..4096;
#  4. issue 5's mid-M rows (M = 64 / 128 / 256, every PERF.md shape), fp16;
#  5. issue 5's M >= 1024 rows in bf16 (cuBLAS bf16 a member);
#  6. bf16 uint4b8 and fp16 uint4 decode rows at M = 1 / 16 (the hybrid).
set -u
L=${CALLF_LIMIT:-560}
. scripts/lib/device-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
S=/tmp/s61f; rm -rf $S; mkdir -p $S/d $S/e && tar -xJf .carry-d60/b.tar.xz -C $S/d && tar -xJf .carry-e61/b.tar.xz -C $S/e
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
if ! grep -q H200 $OUT/gpu.txt; then  # another card: the decode GPU test whole (call E's 100 s step cut it), nothing else
  timeout 250 $S/e/w4a16_test_gpu_decode --gtest_brief=1 > $S/t_decode.log 2>&1
  log "w4a16_test_gpu_decode rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/t_decode.log | tr '\n' ' ')"
  grep -h "Failure" -A6 $S/t_decode.log | head -20 | tee -a $OUT/gpu.txt
  cp $S/t_decode.log $OUT/; exit 0
fi
LARGE=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
ALL=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
bench() {  # name shapes ms timeout [dtype]
  env W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 ${5:+W4A16_PREFILL_TUNE_DTYPE=$5} \
    timeout $4 $S/d/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  python3 scripts/prefill-ab/il_table.py $S/$1.csv > $OUT/il_$1.txt 2>&1
  log "$1"
}
bench large $LARGE 1024,4096 90
timeout 150 $S/d/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,4,8,16,64,256,1024 \
  --shapes $ALL --dtypes f16 --scalars uint4b8 --csv $S/hyb_f16.csv > /dev/null 2> $S/err.txt || log "rc=$? hybrid f16"
python3 bench/gpu/hybrid_report.py $S/hyb_f16.csv --markdown > $OUT/hybrid_f16.md 2>&1
log hybrid
timeout 60 $S/e/w4a16_bench_moe $S/moe_f16.csv 1,4,16,64,256,1024,4096 f16 uint4b8 > $S/moe_f16.log 2>&1 || log "rc=$? moe"
log moe
[ $SECONDS -lt $((L - 60)) ] && bench mid $ALL 64,128,256 50
[ $SECONDS -lt $((L - 100)) ] && bench large_bf16 $LARGE 1024,4096 90 bf16
if [ $SECONDS -lt $((L - 90)) ]; then
  timeout 40 $S/d/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 1,16 --shapes $ALL --dtypes bf16 --scalars uint4b8 \
    --csv $S/hyb_bf16.csv > /dev/null 2>> $S/err.txt || log "rc=$? hybrid bf16"
  timeout 40 $S/d/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 1,16 --shapes $ALL --dtypes f16 --scalars uint4 \
    --csv $S/hyb_u4.csv > /dev/null 2>> $S/err.txt || log "rc=$? hybrid uint4"
  log "bf16 / uint4"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=d --exclude=e .
cat $OUT/il_large.txt; sed -n '1,/^$/p' $OUT/hybrid_f16.md; grep chosen $S/moe_f16.log
