#!/usr/bin/env bash
# Prepared for the next session (carry .carry-m60: m/ = prefill_bench + prefill_gpu_test of main at the end of stop 59,
# the next item decoded early; stripped, XZ_OPT="-9e -T2"; repack from HEAD if main moved). First the persistent test
# (its NEXT_INFO=0 and invalid-value checks were added at the end of stop 59, never run), then issue 5's two rows,
# meant for an H200 (never measured there with this kernel), default plan against cuBLAS fp16 shuffled interleaved
# (clock probe on), fp16 uint4b8 g = 128, one process per part:
#  A. M >= 1024: the six >= 8 MB layers at M = 1024 / 4096 (11 rounds);
#  B. mid M: every PERF.md shape at M = 64 / 128 / 256 (11 rounds).
# Config 20 split 1 (the bm256 tile) is the one extra member (tune_tma needs one). ~60 s on an H100.
set -u
. scripts/lib/device-env.sh
S=/tmp/s60c1; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-m60/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 $S/b/m/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist.log 2>&1
echo "persistent test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/persist.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/persist.log | head -20 | tee -a $OUT/gpu.txt
run() {  # name shapes ms timeout
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
    timeout $4 $S/b/m/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || echo "rc=$? $1" | tee -a $OUT/gpu.txt
  echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt
}
run large 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up 1024,4096 220
run mid qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up 64,128,256 220
python3 scripts/prefill-ab/il_table.py $S/large.csv | tee $OUT/il_large.txt
python3 scripts/prefill-ab/il_table.py $S/mid.csv | tee $OUT/il_mid.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
