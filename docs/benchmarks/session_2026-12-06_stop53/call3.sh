#!/usr/bin/env bash
# Stop 53 call 3 (an H200; carries .carry-s52c4 = stop 52's final bench / registry test, .carry-s53c3 = prepare3.sh):
#  A. stop 52's call7.sh: the uint4 hybrid on the six large layers, M = 1..32, fp16 / bf16 (into $OUT/a);
#  B. llama8b.gate_up M = 1024 (issue 5's one M >= 1024 miss on the H200, 0.93x cuBLAS in stop 51): prefill_bench tune_tma,
#     fp16 uint4b8 g = 128, cuBLAS fp16 in the same process, the TMA tiles 12 / 13 / 30 / 31 / 33 (early-issue twins) at
#     splits 1 / 2 and row splits (the default plan's head over its full waves) with tails 12:2, 13:1, 31:1, 33:1; 2 rounds.
. scripts/lib/device-env.sh
# PART_A=0 skips part A (an H100: B alone).
[ "${PART_A:-1}" = 1 ] && { mkdir -p $OUT/a; OUT=$OUT/a bash docs/benchmarks/session_2026-12-06_stop52/call7.sh; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
S=/tmp/s53c3; rm -rf $S; mkdir -p $S /tmp/s53c3b && tar -xJf .carry-s53c3/b.tar.xz -C /tmp/s53c3b
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_CONFIGS=12,13,30,31,33 \
  W4A16_PREFILL_TUNE_SPLITS=1,2 W4A16_PREFILL_ROWSPLIT_TAILS=12:2,13:1,31:1,33:1 \
    timeout 120 /tmp/s53c3b/prefill_bench $S/tune_r$r.csv tune_tma > $S/tune_r$r.log 2>&1 || { echo "rc=$? tune $r"; tail -3 $S/tune_r$r.log; }
done
python3 - $S <<'PY' | tee $OUT/summary_b.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'tune_r*.csv'))):
    for r in csv.DictReader(open(p)):
        t[(r['shape'], r['M'], r['kernel'] + ' | ' + r['plan'])].append(float(r['us']))
for k, v in sorted(t.items(), key=lambda kv: min(kv[1])):
    print('%s M=%s %-110s %s' % (k[0], k[1], k[2][:110], ' / '.join('%.1f' % x for x in v)))
PY
tar -czf $OUT/data_b.tar.gz -C $S .
