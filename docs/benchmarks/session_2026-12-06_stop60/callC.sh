#!/usr/bin/env bash
# Stop 60 call C: stop 59's four prepared device scripts folded into one device call, by priority, each step under its own timeout (after
# four failed starts the budget left room for one call). Carries .carry-m60 (main c4c2722), .carry-b60 (branch
# prefill-epi-bias), .carry-r60 (branch prefill-next-ring), .carry-t60 (branch prefill-trace2); stripped, xz.
#  1. main's persistent test (its NEXT_INFO=0 / invalid-value checks, never run);
#  2. prefill-epi-bias: the whole prefill_gpu_test (merge if it passes);
#  3. prefill-next-ring: the persistent / row-split tests (K = 640: three tiles early), then ring on / off as members
#     of one interleaved run (the M >= 1024 rows, 11 rounds), cuBLAS fp16 beside;
#  4. issue 5's rows (M >= 1024, then mid M) with the epi-bias build if it passed (else main's), default plan;
#  5. a second ring process; 6. the boundary trace with next_info on / off.
set -u
L=${CALLC_LIMIT:-590}  # the call's timeout: the optional steps run only where they still fit
. scripts/lib/device-env.sh
S=/tmp/s60; rm -rf $S; mkdir -p $S
for c in m60 b60 r60 t60; do mkdir -p $S/$c && tar -xJf .carry-$c/b.tar.xz -C $S/$c; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
gt() {  # name binary timeout filter
  timeout $3 $2 --gtest_brief=1 --gtest_filter="$4" > $S/$1.log 2>&1; local rc=$?
  log "$1 rc=$rc: $(grep -E '^\[  (PASSED|FAILED) ' $S/$1.log | tr '\n' ' ')"
  grep -h "Failure" -A6 $S/$1.log | head -20 | tee -a $OUT/gpu.txt
  return $rc
}
LARGE=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
MID=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up
bench() {  # name binary shapes ms timeout [env knob]
  env W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$3 W4A16_PREFILL_TUNE_MS=$4 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 ${6:+W4A16_PREFILL_INTERLEAVE_ENV=$6} \
    timeout $5 $2 $S/$1.csv tune_tma > $S/$1.log 2>&1 || log "rc=$? $1"
  log "$1"
}
gt m_persist $S/m60/m/prefill_gpu_test 60 '*Persistent*'
B=$S/m60/m
if gt b_all $S/b60/prefill_gpu_test 240 '*'; then B=$S/b60; fi
log "rows with $B"
if gt r_persist $S/r60/prefill_gpu_test 90 '*Persistent*:*RowSplit*'; then
  [ $SECONDS -lt $((L - 100)) ] && bench ring_r1 $S/r60/prefill_bench $LARGE 1024,4096 90 W4A16_PREFILL_NEXT_RING=0
fi
[ $SECONDS -lt $((L - 100)) ] && bench large $B/prefill_bench $LARGE 1024,4096 90
[ $SECONDS -lt $((L - 110)) ] && bench mid $B/prefill_bench $MID 64,128,256 90
[ -f $S/ring_r1.csv ] && [ $SECONDS -lt $((L - 150)) ] && bench ring_r2 $S/r60/prefill_bench $LARGE 1024,4096 120 W4A16_PREFILL_NEXT_RING=0
if [ $SECONDS -lt $((L - 80)) ]; then
  for ni in 1 0; do
    W4A16_PREFILL_NEXT_INFO=$ni W4A16_PREFILL_TRACE=$S/trace_llama8b.gate_up_1024_n$ni.txt W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up \
      W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
      timeout 30 $S/t60/prefill_bench $S/tr_$ni.csv tune_tma > $S/tr_$ni.log 2>&1 || log "rc=$? trace $ni"
  done
  python3 docs/benchmarks/session_2026-12-06_stop59/trace_an2.py $S/trace_*.txt > $OUT/trace_summary.txt 2>&1
  log trace
fi
for f in ring large mid; do ls $S/${f}*.csv >/dev/null 2>&1 && python3 scripts/prefill-ab/il_table.py $S/${f}*.csv > $OUT/il_$f.txt 2>&1; done
tar -czf $OUT/data.tar.gz -C $S --exclude=m60 --exclude=b60 --exclude=r60 --exclude=t60 .
cat $OUT/gpu.txt; cat $OUT/il_ring.txt 2>/dev/null
