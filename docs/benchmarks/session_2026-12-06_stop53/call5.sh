#!/usr/bin/env bash
# Stop 53 call 5 (the warm H100 of call 3, carry .carry-s53c3): call 3's part B spread 7-10% between its two rounds on
# the plan's own tile; four more rounds of the plan (bm256 early issue, split 1) against the row split with the bm256
# split-2 cluster tail, cuBLAS fp16 in the same process, llama8b.gate_up M = 1024 fp16 uint4b8.
. scripts/lib/device-env.sh
S=/tmp/s53c5; rm -rf $S; mkdir -p $S /tmp/s53c3b && tar -xJf .carry-s53c3/b.tar.xz -C /tmp/s53c3b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2 3 4; do
  W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_CONFIGS=12 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_ROWSPLIT_TAILS=12:2 timeout 60 /tmp/s53c3b/prefill_bench $S/tune_r$r.csv tune_tma > $S/tune_r$r.log 2>&1 || echo "rc=$? $r"
done
python3 - $S <<'PY' | tee $OUT/summary.txt
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'tune_r*.csv'))):
    for r in csv.DictReader(open(p)):
        t[r['kernel'][:60]].append(float(r['us']))
for k, v in sorted(t.items(), key=lambda kv: statistics.median(kv[1])):
    print('%-60s median %.1f  %s' % (k, statistics.median(v), ' / '.join('%.1f' % x for x in v)))
PY
tar -czf $OUT/data.tar.gz -C $S .
