#!/usr/bin/env bash
# Stop 69 call P (carry .carry-l64 = main c3365b9's prefill_bench; the prefill code of main): for an H200 only. Every TMA
# tile and split where call N (13:24) left issue 5's rows below cuBLAS fp16, to see whether any plan in the table's reach
# closes them: M = 160..256 on llama8b.qkv and qwen0.5b.gate_up, M = 256 on llama70b.gate_up and llama8b.down (splits
# 1..4), M = 1024 on llama8b.qkv and M = 4096 on llama8b.gate_up (split 1). 7 interleaved rounds each.
# MS overrides the first step's Ms (stop 70: MS=160,192,224,256, M = 192 a second process for stop 69 call N's
# llama8b.qkv bm128_bn192 s2 candidate). CARD (a grep pattern, default H200) names the cards it runs on (stop 71:
# CARD='H[12]00', the tiles ranked on an H100 with the H200's 132 SMs and clocks where no H200 comes).
set -u
. scripts/lib/device-env.sh
S=/tmp/s69p; rm -rf $S; mkdir -p $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
grep -q "${CARD:-H200}" $OUT/gpu.txt || { echo "not ${CARD:-H200}: nothing run"; exit 0; }
tar -xJf ${CARRY:-.carry-l64}/b.tar.xz -C $S/b
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
bench() {  # name shapes Ms splits rounds timeout
  env W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$2 W4A16_PREFILL_TUNE_MS=$3 W4A16_PREFILL_TUNE_SPLITS=$4 \
    W4A16_PREFILL_INTERLEAVE=$5 timeout $6 $S/b/prefill_bench $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  python3 scripts/prefill-ab/il_table.py $S/$1.csv > $OUT/il_$1.txt 2>&1
  log "$1"
}
bench m256 llama8b.qkv,qwen0.5b.gate_up ${MS:-160,224,256} 1,2,3,4 7 120
bench w256 llama70b.gate_up,llama8b.down 256 1,2,3,4 7 90
bench k1024 llama8b.qkv 1024 1 7 60
bench k4096 llama8b.gate_up 4096 1 7 90
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
