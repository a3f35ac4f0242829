#!/usr/bin/env bash
# Prepared for the next stop (not run here: the device budget was spent): the row split with a finely split tail on
# llama8b.gate_up at M = 1024 / 2048 (the data-parallel + split-K tail idea). ncu of stop 53 call 1: the bm256 plan's
# 896 tiles are 6.79 waves of one CTA per SM and the SMs are active 94.4% of the elapsed cycles; a tail of the last
# 104 tiles split s runs ceil(104 s / 132) / s tile-times: 1 at s = 1..4, 0.8 at s = 5, 0.83 at 6 (M = 2048: 76 tail
# tiles, 0.6 at s = 5, 0.67 at 3). Row splits (the plan's bm256 head over its full waves, the rest bm256 at split s,
# cluster reduce where schedulable) against the plan and cuBLAS fp16 in the same process, fp16 uint4b8, 4 rounds.
# llama70b.gate_up M = 1024 (the same 76-tile tail) too, 2 rounds. Carry .carry-s53c3 (prepare3.sh: HEAD's prefill_bench). Best on an H200 (issue 5's row), with call3.sh part A too.
. scripts/lib/device-env.sh
S=/tmp/s53c7; rm -rf $S; mkdir -p $S /tmp/s53c3b && tar -xJf .carry-s53c3/b.tar.xz -C /tmp/s53c3b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2 3 4; do
  W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up W4A16_PREFILL_TUNE_MS=1024,2048 W4A16_PREFILL_TUNE_CONFIGS=12 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_ROWSPLIT_TAILS=12:2,12:3,12:4,12:5,12:6 timeout 90 /tmp/s53c3b/prefill_bench $S/tune_r$r.csv tune_tma > $S/tune_r$r.log 2>&1 \
    || echo "rc=$? $r" | tee -a $OUT/gpu.txt
done
# llama70b.gate_up M = 1024: 448 x 4 = 1792 tiles, 13.58 waves, a 76-tile tail (0.6 tile-times at s = 5); 2 rounds.
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_CONFIGS=12 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_ROWSPLIT_TAILS=12:3,12:5 timeout 90 /tmp/s53c3b/prefill_bench $S/tune_l70_r$r.csv tune_tma > $S/tune_l70_r$r.log 2>&1 \
    || echo "rc=$? l70 $r" | tee -a $OUT/gpu.txt
done
python3 - $S <<'PY' | tee $OUT/summary.txt
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'tune_*r*.csv'))):
    for r in csv.DictReader(open(p)):
        t[(r['shape'], int(r['M']), r['kernel'][:60])].append(float(r['us']))
for k, v in sorted(t.items(), key=lambda kv: (kv[0][0], kv[0][1], statistics.median(kv[1]))):
    print('%-16s M=%-5d %-60s median %.1f  %s' % (k[0], k[1], k[2], statistics.median(v), ' / '.join('%.1f' % x for x in v)))
PY
tar -czf $OUT/data.tar.gz -C $S .
