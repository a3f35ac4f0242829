#!/usr/bin/env bash
# Stop 57 call 2 (carry .carry-trace: prefill_bench of branch prefill-trace): where the persistent loop's split tail
# loses time. W4A16_PREFILL_TRACE appends, for every launch outside a capture (the timer's eager warm-up calls), each
# CTA's items with %globaltimer at the item's start, its k loop's end and its end (after the part's reduce / the store's
# issue). Rows (shuffled interleaved with cuBLAS fp16 and the default plan, 12 rounds, clock probe): the bm256 tile at
# split 1 (config 20) on llama8b.qkv M = 1024 (192 tiles = 132 + 60, tail in 2 parts), llama70b.gate_up M = 256 (448 =
# 3 x 132 + 52, 2 parts) and llama8b.gate_up M = 4096 (3584 = 27 x 132 + 20, 6 parts), with the split tail on, off
# (W4A16_PREFILL_TAIL_SPLIT=0), with the counts' memset only on a workspace's first launch (W4A16_PREFILL_TAIL_MEMSET), and
# with 2-part tails summed from the other part and this part's registers (W4A16_PREFILL_TAIL_OWN; first its bits: the
# persistent test, whose tail tiles must equal the split plan's bitwise).
set -u
. scripts/lib/device-env.sh
S=/tmp/s57c2; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-trace/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu2.txt
# the persistent test (now with K = 576: a 2-part tail) as main runs it and with the 2-part sum from registers, side by side
timeout 120 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_main.log 2>&1 &
W4A16_PREFILL_TAIL_OWN=1 timeout 120 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_own.log 2>&1
wait
for f in $S/persist_main.log $S/persist_own.log; do echo "$(basename $f): $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -c 'x 2 parts' $f) checks with 2-part tails"; done | tee -a $OUT/gpu2.txt
grep -h "Failure" -A6 $S/persist_*.log | head -20 | tee -a $OUT/gpu2.txt
for v in on off once own; do
  case $v in on) E="";; off) E="W4A16_PREFILL_TAIL_SPLIT=0";; once) E="W4A16_PREFILL_TAIL_MEMSET=0";; own) E="W4A16_PREFILL_TAIL_OWN=1";; esac
  for sm in "llama8b.qkv:1024" "llama70b.gate_up:256"; do
    n=${sm%%:*}_${sm##*:}_$v
    env $E W4A16_PREFILL_TRACE=$S/trace_$n.txt W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} \
      W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=10 \
      timeout 60 $S/b/prefill_bench $S/il_$n.csv tune_tma > $S/il_$n.log 2>&1 || echo "rc=$? $n" | tee -a $OUT/gpu2.txt
  done
  echo "$v (${SECONDS}s)" | tee -a $OUT/gpu2.txt
done
for f in $S/il_*.csv; do echo "$(basename $f)"; grep "_il," $f | cut -d, -f1,5,10 | sed 's/^/  /'; done | tee -a $OUT/gpu2.txt
python3 docs/benchmarks/session_2026-12-06_stop57/trace_an.py $S/trace_*.txt | tee $OUT/trace_summary.txt
tar -czf $OUT/trace.tar.gz -C $S --exclude=b .
