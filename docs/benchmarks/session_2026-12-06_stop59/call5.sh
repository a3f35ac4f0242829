#!/usr/bin/env bash
# Stop 59 call 5 (carry .carry-e59 = prefill_bench + prefill_gpu_test of branch prefill-trace-epi = prefill-trace
# 87d2eda + six trace stamps per item + W4A16_PREFILL_EPI_FIRST, stripped): where the persistent loop's ~2 us between
# one item's end and the next item's k loop goes (stop 58's trace), and whether running the epilogue before the next
# item's first loads (its proxy fence then has no cp.async of this thread in flight to wait for) is faster.
#  A. the persistent tests with W4A16_PREFILL_EPI_FIRST=1 (correctness of the other order);
#  B. traces of the eager launches, llama8b.gate_up M = 1024 and llama8b.qkv M = 4096, each order (trace_an2.py);
#  C. the M >= 1024 rows, the default and EPI_FIRST=1 as members of one interleaved run, 11 rounds.
set -u
. scripts/lib/device-env.sh
S=/tmp/s59c5; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-e59/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
W4A16_PREFILL_EPI_FIRST=1 timeout 100 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_epi.log 2>&1
echo "persistent tests, epilogue first: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/persist_epi.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
for e in 0 1; do
  for sm in llama8b.gate_up:1024 llama8b.qkv:4096; do
    W4A16_PREFILL_EPI_FIRST=$e W4A16_PREFILL_TRACE=$S/trace_${sm%%:*}_${sm##*:}_e$e.txt W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} \
      W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=2 \
      timeout 40 $S/b/prefill_bench $S/tr_$e.csv tune_tma > /dev/null 2>&1 || echo "rc=$? trace $e $sm" | tee -a $OUT/gpu.txt
  done
done
python3 docs/benchmarks/session_2026-12-06_stop59/trace_an2.py $S/trace_*.txt | tee $OUT/trace_summary.txt
echo "B (${SECONDS}s)" | tee -a $OUT/gpu.txt
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up \
  W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=11 \
  W4A16_PREFILL_INTERLEAVE_ENV=W4A16_PREFILL_EPI_FIRST=1 \
  timeout 150 $S/b/prefill_bench $S/large.csv tune_tma > $S/large.log 2>&1 || echo "rc=$? large" | tee -a $OUT/gpu.txt
echo "C (${SECONDS}s)" | tee -a $OUT/gpu.txt
python3 scripts/prefill-ab/il_table.py $S/large.csv | tee $OUT/table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
