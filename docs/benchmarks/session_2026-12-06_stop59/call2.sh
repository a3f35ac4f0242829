#!/usr/bin/env bash
# Stop 59 call 2 (carry .carry-m59, its t/ = prefill_bench / prefill_gpu_test
# of branch prefill-trace 87d2eda = main 2e0d1fe + the trace and W4A16_PREFILL_TAIL_MEMSET knobs, stripped,
# XZ_OPT="-9e -T2"): is the split tail's per-launch memset of its arrival counts the 5-7% that call 1 read, and is
# skipping it correct across replays?
#  A. the persistent test with W4A16_PREFILL_TAIL_MEMSET=0 (the counts zeroed only on a workspace pointer's first
#     launch): a pass says the kernel leaves them zero; a failure on a reused cudaMalloc address says what the memset
#     guards against (a caching allocator hands the same address out with other data in it);
#  B. llama8b.qkv M = 1024 and llama70b.gate_up M = 256 with the row split off (the default = the split tail), the
#     default plan with and without the memset as members of one interleaved run (W4A16_PREFILL_INTERLEAVE_ENV), 16
#     rounds, 2 processes; every int4 member re-checked on a poisoned output after its replays (rel_err column).
set -u
. scripts/lib/device-env.sh
S=/tmp/s59c2; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-m59/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
W4A16_PREFILL_TAIL_MEMSET=0 timeout 150 $S/b/t/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_once.log 2>&1
echo "persistent test, memset once: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/persist_once.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
grep -h "Failure" -A6 $S/persist_once.log | head -20 | tee -a $OUT/gpu.txt
for r in 1 2; do
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama70b.gate_up W4A16_PREFILL_TUNE_MS=256,1024 \
    W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=16 \
    W4A16_PREFILL_INTERLEAVE_ENV=W4A16_PREFILL_TAIL_MEMSET=0 \
    timeout 200 $S/b/t/prefill_bench $S/memset_r$r.csv tune_tma > $S/memset_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/memset_r*.csv | tee $OUT/memset_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
