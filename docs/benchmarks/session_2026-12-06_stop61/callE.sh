#!/usr/bin/env bash
# Stop 61 call E (carries .carry-e61 = main e678115's w4a16_bench_moe and the decode / registry / MoE GPU test binaries,
# .carry-d60 = the same build's prefill_bench; stripped, xz): what call D leaves out, by priority.
#  1. the decode, registry and MoE GPU tests (every accepted configuration against the CPU / f64 reference);
#  2. issue 5's mid-M rows (M = 64 / 128 / 256 over every PERF.md shape), the default plan against cuBLAS fp16, shuffled
#     interleaved, 11 rounds;
#  3. issue 7's rows: w4a16_bench_moe (Qwen3-30B-A3B, T = 1..4096, the per-expert cuBLAS loop in the same process),
#     fp16 uint4b8 then bf16 uint4b8.
set -u
. scripts/lib/device-env.sh
S=/tmp/s61e; rm -rf $S; mkdir -p $S/e $S/d && tar -xJf .carry-e61/b.tar.xz -C $S/e && tar -xJf .carry-d60/b.tar.xz -C $S/d
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
for t in decode registry moe; do
  timeout 100 $S/e/w4a16_test_gpu_$t --gtest_brief=1 > $S/t_$t.log 2>&1
  log "w4a16_test_gpu_$t rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/t_$t.log | tr '\n' ' ')"
  grep -h "Failure" -A6 $S/t_$t.log | head -20 | tee -a $OUT/gpu.txt
done
MID=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$MID W4A16_PREFILL_TUNE_MS=64,128,256 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 timeout 100 $S/d/prefill_bench $S/mid.csv tune_tma > $S/mid.log 2>&1 || log "rc=$? mid"
log mid
python3 scripts/prefill-ab/il_table.py $S/mid.csv > $OUT/il_mid.txt 2>&1
timeout 150 $S/e/w4a16_bench_moe $S/moe_f16.csv 1,4,16,64,256,1024,4096 f16 uint4b8 > $S/moe_f16.log 2>&1 || log "rc=$? moe f16"
log "moe f16"
if [ $SECONDS -lt 420 ]; then
  timeout 120 $S/e/w4a16_bench_moe $S/moe_bf16.csv 1,4,16,64 bf16 uint4b8 > $S/moe_bf16.log 2>&1 || log "rc=$? moe bf16"
  log "moe bf16"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=e --exclude=d .
cat $OUT/il_mid.txt; grep -v "^#" $S/moe_f16.log | tail -12
