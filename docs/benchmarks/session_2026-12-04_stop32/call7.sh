#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 7: the direct path's GEMM 2 folded with the weighted top-k sum (ring_fold: items
# (token, 16-row stripe), warp j = slot j; no y rows, no reduce launch). MoE GPU tests first (folded = unfolded bit
# for bit), then whole processes W4A16_MOE_RING_FOLD=0 against =1 (the default), the bench's chosen rows, 3 rounds
# interleaved: fp16 uint4b8 T = 1, 2, 4 and bf16 uint4b8 / fp16 uint4 T = 1, 4.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c7; mkdir -p $W/out && tar -xJf .carry-s32/bins7.tar.xz -C $W
timeout 240 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_new.log 2>&1; echo "test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran|Failure|differ" $W/out/test_new.log | head -12
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for f in 0 1; do
    W4A16_MOE_RING_FOLD=$f timeout 60 $W/new/w4a16_bench_moe $W/out/f16_f${f}_r$r.csv 1,2,4 f16 uint4b8 > /dev/null
    W4A16_MOE_RING_FOLD=$f timeout 60 $W/new/w4a16_bench_moe $W/out/bf16_f${f}_r$r.csv 1,4 bf16 uint4b8 > /dev/null
    W4A16_MOE_RING_FOLD=$f timeout 60 $W/new/w4a16_bench_moe $W/out/u4_f${f}_r$r.csv 1,4 f16 uint4 > /dev/null
    echo "r$r f$f t=$(($(date +%s)-T0))"
  done
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list); pct = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    kind, f, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        if row['path'] == 'chosen':
            t[(kind, int(row['T']), f)].append(float(row['fused_us'])); pct[(kind, int(row['T']), f)] = (row['fused_pct_4.4'], row['speedup'], row['rel_err_vs_cublas'])
print('%-5s %5s %-24s %-24s %8s  %s' % ('kind', 'T', 'unfolded (f0) us', 'folded (f1) us', 'f1/f0', 'folded: % of 4.4, x cuBLAS loop, rel err'))
for kind, T in sorted({k[:2] for k in t}):
    a, b = t[(kind, T, 'f0')], t[(kind, T, 'f1')]
    print('%-5s %5d %-24s %-24s %8.3f  %s' % (kind, T, ' '.join('%.2f' % x for x in a), ' '.join('%.2f' % x for x in b), statistics.median(b) / statistics.median(a), pct[(kind, T, 'f1')]))
PY
tar -czf $OUT/call7.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
