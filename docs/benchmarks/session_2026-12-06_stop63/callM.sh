#!/usr/bin/env bash
# Stop 63 call M (carry .carry-l62 = main f88a17b's prefill_bench, stripped, xz), right after call L on the same warm
# machine: issue 5's rows with the table as it stands after stops 61 / 62 (the H200 entries of stop 61 and the tile-39
# entry of stop 62 were never part of an H200 measurement of the rows):
#  1. mid M (M = 64 / 128 / 256, every PERF.md shape), the default plan against cuBLAS fp16, shuffled interleaved,
#     11 rounds;
#  2. M >= 1024 (1024 / 4096, the six layers of 8 MB and more), the same way, in two processes.
set -u
. scripts/lib/device-env.sh
S=/tmp/s63m; rm -rf $S; mkdir -p $S/b && tar -xJf ${CARRY:-.carry-l62}/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
LARGE=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
ALL=$LARGE,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
bench() {  # name shapes ms timeout
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 timeout $4 $S/b/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  python3 scripts/prefill-ab/il_table.py $S/$1.csv > $OUT/il_$1.txt 2>&1
  log "$1"
}
bench mid $ALL 64,128,256 120
bench large1 $LARGE 1024,4096 120
bench large2 $LARGE 1024,4096 120
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
for f in mid large1 large2; do echo "== $f"; cat $OUT/il_$f.txt; done
