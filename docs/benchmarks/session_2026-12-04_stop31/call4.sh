#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 4: what the prefill k loop's per-thread W refill costs (a timing-only bound). `diag` is
# main built with -DW4A16_DIAG_NO_W_REFILL (prefill_kernel.cuh: the early-issue kernels never refill their W slots after
# the prologue: wrong results, the same instructions otherwise); `new` is main. prefill_bench tune_tma of the early-issue
# bm64 occ2 (23) and bm128_bn128 occ2 (32) tiles at M = 64 (splits 1, 2, 4) on the >= 32 MB layers and of bm256 (20)
# at M = 1024 (splits 1, 2), two interleaved rounds per build.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31; mkdir -p $W
tar -xJf .carry-s31/bins4.tar.xz -C $W
for r in 1 2; do
  for b in new diag; do
    W4A16_PREFILL_TUNE_MS=64 W4A16_PREFILL_TUNE_SPLITS=1,2,4 W4A16_PREFILL_TUNE_CONFIGS=23,32 \
    W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up \
      timeout 100 $W/$b/prefill_bench $OUT/call4_${b}_m64_r$r.csv tune_tma > $W/${b}_m64_r$r.log 2>&1
    W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_SPLITS=1,2 W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.qkv \
      timeout 60 $W/$b/prefill_bench $OUT/call4_${b}_m1024_r$r.csv tune_tma > $W/${b}_m1024_r$r.log 2>&1
    echo "$b round $r t=$(($(date +%s)-T0))"
  done
done
python3 - $OUT <<'PY'
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in glob.glob(os.path.join(sys.argv[1], 'call4_*.csv')):
    b = os.path.basename(p).split('_')[1]
    for r in csv.DictReader(open(p)):
        if r['kernel'].startswith('cuda_prefill:'): t[(r['shape'], int(r['M']), r['kernel'].split(':', 1)[1], b)].append(float(r['us']))
keys = sorted({k[:3] for k in t})
print('%-18s %5s %-45s %8s %8s %6s' % ('shape', 'M', 'tile:split', 'main us', 'diag us', 'diag/main'))
for k in keys:
    a, d = min(t.get(k + ('new',), [float('nan')])), min(t.get(k + ('diag',), [float('nan')]))
    print('%-18s %5d %-45s %8.1f %8.1f %6.3f' % (k[0], k[1], k[2], a, d, d / a))
PY
tar -czf $OUT/call4_csv.tar.gz -C $OUT $(cd $OUT && ls call4_*.csv) && rm $OUT/call4_*.csv
echo "total $(($(date +%s)-T0)) s"
