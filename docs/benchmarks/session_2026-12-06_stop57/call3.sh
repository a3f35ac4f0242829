#!/usr/bin/env bash
# Stop 57 call 3: calls 1 and 2 in the device time left after five failed starts (carry .carry-trace: prefill_bench and
# prefill_gpu_test of branch prefill-trace, i.e. main 6ddf414 + the experiment's knobs, default off; main 6ddf414's
# w4a16_test_gpu_registry).
#  A. in parallel (correctness only): the whole prefill_gpu_test as main runs it (its persistent test now with K = 576:
#     a 2-part tail), the registry GPU test, and the persistent test with 2-part tails summed from the other part and
#     this part's registers (W4A16_PREFILL_TAIL_OWN: the tail tiles must still equal the split plan's bitwise).
#  B. call2.sh's rows (the per-item trace; split tail on / off / memset once / own), 10 shuffled rounds each.
set -u
. scripts/lib/device-env.sh
S=/tmp/s57c2; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-trace/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 $S/b/prefill_gpu_test --gtest_brief=1 > $S/prefill_main.log 2>&1 & p1=$!
timeout 200 $S/b/w4a16_test_gpu_registry --gtest_brief=1 > $S/registry.log 2>&1 & p2=$!
W4A16_PREFILL_TAIL_OWN=1 timeout 200 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_own.log 2>&1 & p3=$!
wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
for x in "prefill_main $r1" "registry $r2" "persist_own $r3"; do
  f=$S/${x% *}.log; echo "${x% *} rc=${x#* }: $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -c 'x 2 parts' $f) checks with 2-part tails"
done | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/*.log | head -30 | tee -a $OUT/gpu.txt
echo "A (${SECONDS}s)" | tee -a $OUT/gpu.txt
for v in on off once own; do
  case $v in on) E="";; off) E="W4A16_PREFILL_TAIL_SPLIT=0";; once) E="W4A16_PREFILL_TAIL_MEMSET=0";; own) E="W4A16_PREFILL_TAIL_OWN=1";; esac
  for sm in "llama8b.qkv:1024" "llama70b.gate_up:256"; do
    n=${sm%%:*}_${sm##*:}_$v
    env $E W4A16_PREFILL_TRACE=$S/trace_$n.txt W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} \
      W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=10 \
      timeout 40 $S/b/prefill_bench $S/il_$n.csv tune_tma > $S/il_$n.log 2>&1 || echo "rc=$? $n" | tee -a $OUT/gpu.txt
  done
  echo "$v (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
for f in $S/il_*.csv; do echo "$(basename $f)"; grep "_il," $f | cut -d, -f1,5,10 | sed 's/^/  /'; done | tee -a $OUT/gpu.txt
python3 docs/benchmarks/session_2026-12-06_stop57/trace_an.py $S/trace_*.txt | tee $OUT/trace_summary.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
