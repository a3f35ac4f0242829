#!/usr/bin/env bash
# Stop 49 call 1: (a) the row split (branch prefill-row-split: prefill_run_row_split, kMeasuredRowSplits with a
# placeholder entry for llama8b.qkv M = 769..1024): its GPU test and every prefill GPU test of that build; then, with
# W4A16_PREFILL_ROW_SPLIT=0 (the default plan as on main), tune_tma with row splits on the part-wave points (llama8b.qkv M = 1024 / 2048 / 4096,
# Qwen2.5-7B qkv M = 1024, llama8b.gate_up and 8192x8192 M = 1024): the default plan, the bm256 head (config 20) alone,
# and the head over its full waves' rows + each tail (config:split), cuBLAS fp16 in the same process, 2 rounds;
# Carry: .carry-s49rs (`REV=22c41ba bash prepare.sh`: the build with the placeholder entry, occ2 s2 tail).
. scripts/lib/device-env.sh
O=$OUT; W=/tmp/s49c1; rm -rf $W; mkdir -p $W/rs && tar -xJf .carry-s49rs/b.tar.xz -C $W/rs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
timeout 300 $W/rs/prefill_gpu_test > $W/gtest.log 2>&1; echo "prefill_gpu_test rc=$?" | tee -a $O/gpu.txt
grep -E "^\[  (FAILED|PASSED) |^\[==========\]|RowSplit|token split" $W/gtest.log | head -30 | tee $O/gtest_summary.txt
grep -B2 -A8 "Failure" $W/gtest.log | head -60 >> $O/gtest_summary.txt
for r in $(seq 1 ${R:-2}); do
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=1024,2048,4096 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_ROWSPLIT_HEAD=20 \
  W4A16_PREFILL_ROWSPLIT_TAILS=32:1,32:2,20:2,23:1,23:2,34:1,34:2 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv \
    timeout 150 $W/rs/prefill_bench $O/rs_qkv_r$r.csv tune_tma > $W/q$r.log 2>&1 || { echo "rc=$? qkv r$r"; tail -3 $W/q$r.log; }
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_ROWSPLIT_HEAD=20 \
  W4A16_PREFILL_ROWSPLIT_TAILS=32:1,32:2,32:4,20:2,20:4,23:1,23:2,34:1,34:2 W4A16_PREFILL_TUNE_SHAPES=q7b.qkv:4608:3584,llama8b.gate_up,8192x8192 \
    timeout 150 $W/rs/prefill_bench $O/rs_other_r$r.csv tune_tma > $W/o$r.log 2>&1 || { echo "rc=$? other r$r"; tail -3 $W/o$r.log; }
  # the placeholder entry as the default (cuda_prefill = the row split at 1000 / 1024), the token split's old plan beside
  W4A16_PREFILL_TUNE_MS=1000,1024 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv \
    timeout 100 $W/rs/prefill_bench $O/rs_default_r$r.csv tune_tma > $W/d$r.log 2>&1 || { echo "rc=$? default r$r"; tail -3 $W/d$r.log; }
done
python3 - $O <<'PY' | tee $O/rowsplit.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(list); plan = {}; err = collections.defaultdict(float)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'rs_*_r*.csv'))):
    for r in csv.DictReader(open(p)):
        k = (r['shape'] + ('*' if 'default' in p else ''), int(r['m']), r['kernel'])
        t[k].append(float(r['us'])); plan[k] = r.get('plan', ''); err[k] = max(err[k], float(r.get('rel_err') or 0))
for k in sorted(t):
    print('%-16s %5d %-58s %s  err %.1e  %s' % (k[0], k[1], k[2], ' '.join('%.2f' % v for v in sorted(t[k])), err[k], plan[k][:90]))
PY
