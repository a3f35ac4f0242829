#!/usr/bin/env bash
# Stop 63 call N (carry .carry-l62 = main f88a17b's prefill_bench, stripped, xz): for an H200 only (calls L / M ran on an
# H100; on another card it stops after nvidia-smi). By priority, within ~250 s:
#  1. the tile-39 entry's A/B (llama70b.gate_up M = 40..64: default plan, 39 s2, 23 s2, cuBLAS fp16; 7 rounds);
#  2. call M's issue 5 rows: mid M (64 / 128 / 256, every PERF.md shape) and M >= 1024 (one process), 11 rounds;
#  3. if time is left, tune_tma of every tile and split at M = 128 / 192 on llama8b.qkv and qwen0.5b.gate_up (the H200's
#     M = 128 misses of stop 61).
set -u
. scripts/lib/device-env.sh
S=/tmp/s63n; rm -rf $S; mkdir -p $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: nothing run"; exit 0; }
tar -xJf ${CARRY:-.carry-l62}/b.tar.xz -C $S/b
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
LARGE=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
ALL=$LARGE,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
bench() {  # name shapes ms configs splits rounds timeout
  env W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 ${4:+W4A16_PREFILL_TUNE_CONFIGS=$4} \
    ${5:+W4A16_PREFILL_TUNE_SPLITS=$5} W4A16_PREFILL_INTERLEAVE=$6 timeout $7 $S/b/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  python3 scripts/prefill-ab/il_table.py $S/$1.csv > $OUT/il_$1.txt 2>&1
  log "$1"
}
STEPS=" ${STEPS:-ab mid large tune128} "  # a subset where less device time is left (stop 67: STEPS="mid large")
[[ $STEPS == *" ab "* ]] && bench ab llama70b.gate_up 40,48,56,64 23,39 2 7 60
[[ $STEPS == *" mid "* ]] && bench mid $ALL 64,128,256 20 1 11 60
[[ $STEPS == *" large "* ]] && bench large $LARGE 1024,4096 20 1 11 100
[[ $STEPS == *" tune128 "* ]] && [ $SECONDS -lt 150 ] && bench tune128 llama8b.qkv,qwen0.5b.gate_up 128,192 "" 1,2,3,4 7 90
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
for f in ab mid large tune128; do [ -f $OUT/il_$f.txt ] && { echo "== $f"; cat $OUT/il_$f.txt; }; done
