#!/usr/bin/env bash
# Stop 53 call 6 (carry .carry-s53c6 from prepare6.sh): W4A16_PREFILL_M_FAST (the m blocks of one row block launched
# consecutively) off / on in one binary, 3 interleaved rounds: prefill_bench tune_tma (the plan, again, the bm256 tile at
# split 1; cuBLAS fp16 in the same process) on five large layers at M = 1024 / 2048, fp16 uint4b8; then the prefill GPU
# tests that run multi-m-block grids with M_FAST=1.
. scripts/lib/device-env.sh
S=/tmp/s53c6; rm -rf $S; mkdir -p $S /tmp/s53c6b && tar -xJf .carry-s53c6/b.tar.xz -C /tmp/s53c6b; B=/tmp/s53c6b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2 3; do for f in 0 1; do
  W4A16_PREFILL_M_FAST=$f W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up,8192x8192,llama8b.down,llama8b.qkv,llama8b.o \
  W4A16_PREFILL_TUNE_MS=1024,2048 W4A16_PREFILL_TUNE_CONFIGS=12 W4A16_PREFILL_TUNE_SPLITS=1 \
    timeout 45 $B/prefill_bench $S/f${f}_r$r.csv tune_tma > $S/f${f}_r$r.log 2>&1 || echo "rc=$? f$f r$r" | tee -a $OUT/gpu.txt
done; done
python3 - $S <<'PY' | tee $OUT/summary.txt
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'f*_r*.csv'))):
    f = os.path.basename(p)[1]
    for r in csv.DictReader(open(p)):
        t[(r['shape'], int(r['M']), r['kernel'][:44])][f].append(float(r['us']))
for k in sorted(t):
    a, b = t[k]['0'], t[k]['1']
    if a and b:
        print('%-16s M=%-5d %-44s off %s | on %s | on/off %.3f' % (k[0], k[1], k[2], '/'.join('%.1f' % x for x in a),
              '/'.join('%.1f' % x for x in b), statistics.median(b) / statistics.median(a)))
PY
W4A16_PREFILL_M_FAST=1 timeout 100 $B/prefill_gpu_test --gtest_filter='*EveryConfigurationMatchesReference*:*TmaConfigsOnTails*:*LargeMRealShape*:*RowSplit*:*TokenSplit*:*TailTokens*' \
  > $S/test_mfast.log 2>&1; echo "tests M_FAST=1 rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/test_mfast.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
grep -B3 -A8 Failure $S/test_mfast.log | head -30 | tee -a $OUT/gpu.txt
tar -czf $OUT/data.tar.gz -C $S .
