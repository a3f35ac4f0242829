#!/usr/bin/env bash
# Stop 57 call 2 (prepared, not run; carry $S57_CARRY, default .carry-trace: prefill_bench and prefill_gpu_test of branch
# prefill-trace, stripped, XZ_OPT="-9e -T2"): where the persistent loop's split tail loses time.
#  A. the persistent test (now with K = 576: a 2-part tail) as main runs it and with W4A16_PREFILL_TAIL_OWN (2-part
#     tails summed from the other part and this part's registers; the tail tiles must still equal the split plan's
#     bitwise), side by side.
#  B. per row of $S57_ROWS (default llama8b.qkv M = 1024: 192 tiles = 132 + 60, tail in 2 parts; llama70b.gate_up M = 256:
#     448 = 3 x 132 + 52, 2 parts): the bm256 tile at split 1 (config 20) shuffled interleaved with cuBLAS fp16 and the
#     default plan ($S57_ROUNDS rounds, default 10; clock probe), with the split tail on, off (W4A16_PREFILL_TAIL_SPLIT=0),
#     with the counts' memset only on a workspace's first launch (W4A16_PREFILL_TAIL_MEMSET=0) and own
#     (W4A16_PREFILL_TAIL_OWN=1). W4A16_PREFILL_TRACE appends, for every launch outside a capture (the timer's eager
#     warm-up calls), each CTA's items with %globaltimer at the item's start, its k loop's end and its end (after the
#     part's reduce / the store's issue); trace_an.py summarizes them.
set -u
. scripts/lib/device-env.sh
D=docs/benchmarks/session_2026-12-06_stop57
S=/tmp/s57c2; rm -rf $S; mkdir -p $S/b && tar -xJf "${S57_CARRY:-.carry-trace}/b.tar.xz" -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu2.txt
timeout 120 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_main.log 2>&1 &
W4A16_PREFILL_TAIL_OWN=1 timeout 120 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*' > $S/persist_own.log 2>&1
wait
for f in $S/persist_main.log $S/persist_own.log; do echo "$(basename $f): $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -c 'x 2 parts' $f) checks with 2-part tails"; done | tee -a $OUT/gpu2.txt
grep -h "Failure" -A6 $S/persist_*.log | head -20 | tee -a $OUT/gpu2.txt
for v in on off once own; do
  case $v in on) E="";; off) E="W4A16_PREFILL_TAIL_SPLIT=0";; once) E="W4A16_PREFILL_TAIL_MEMSET=0";; own) E="W4A16_PREFILL_TAIL_OWN=1";; esac
  for sm in ${S57_ROWS:-llama8b.qkv:1024 llama70b.gate_up:256}; do
    n=${sm%%:*}_${sm##*:}_$v
    env $E W4A16_PREFILL_TRACE=$S/trace_$n.txt W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} \
      W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=${S57_ROUNDS:-10} \
      timeout 60 $S/b/prefill_bench $S/il_$n.csv tune_tma > $S/il_$n.log 2>&1 || echo "rc=$? $n" | tee -a $OUT/gpu2.txt
  done
  echo "$v (${SECONDS}s)" | tee -a $OUT/gpu2.txt
done
for f in $S/il_*.csv; do echo "$(basename $f)"; grep "_il," $f | cut -d, -f1,5,10 | sed 's/^/  /'; done | tee -a $OUT/gpu2.txt
python3 $D/trace_an.py $S/trace_*.txt | tee $OUT/trace_summary.txt
tar -czf $OUT/trace.tar.gz -C $S --exclude=b .
