#!/usr/bin/env bash
# Stop 57 call 4: call 3 cut to the ~5 min of device time left after six failed starts (carry .carry-lean: call 3's prefill_bench and prefill_gpu_test):
# the persistent test (with K = 576, a 2-part tail) as main runs it and with W4A16_PREFILL_TAIL_OWN, side by side; then
# the traced rows of llama8b.qkv M = 1024 with the split tail on / off / memset once / own (8 shuffled rounds each).
set -u
. scripts/lib/device-env.sh
S=/tmp/s57c4; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-lean/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_main.log 2>&1 & p1=$!
W4A16_PREFILL_TAIL_OWN=1 timeout 100 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_own.log 2>&1 & p3=$!
for v in on off once own; do
  case $v in on) E="";; off) E="W4A16_PREFILL_TAIL_SPLIT=0";; once) E="W4A16_PREFILL_TAIL_MEMSET=0";; own) E="W4A16_PREFILL_TAIL_OWN=1";; esac
  n=qkv_1024_$v
  env $E W4A16_PREFILL_TRACE=$S/trace_$n.txt W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv W4A16_PREFILL_TUNE_MS=1024 \
    W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=8 \
    timeout 30 $S/b/prefill_bench $S/il_$n.csv tune_tma > $S/il_$n.log 2>&1 || echo "rc=$? $n" | tee -a $OUT/gpu.txt
  echo "$v (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
wait $p1; r1=$?; wait $p3; r3=$?
for x in "persist_main $r1" "persist_own $r3"; do
  f=$S/${x% *}.log; echo "${x% *} rc=${x#* }: $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -c 'x 2 parts' $f) checks with 2-part tails"
done | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/*.log | head -30 | tee -a $OUT/gpu.txt
for f in $S/il_*.csv; do echo "$(basename $f)"; grep "_il," $f | cut -d, -f1,5,10 | sed 's/^/  /'; done | tee -a $OUT/gpu.txt
python3 docs/benchmarks/session_2026-12-06_stop57/trace_an.py $S/trace_*.txt | tee $OUT/trace_summary.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
