#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 6: the ring kernel's round-robin grid as the default (W4A16_MOE_RING unset = 2),
# checked as whole processes (the in-process rows after `chosen` read faster: drift, 2026-12-03 late): the bench's
# chosen row with W4A16_MOE_RING=1 (balanced) against =2 (round robin), 3 rounds interleaved, fp16 uint4b8 T = 1, 4, 16,
# 64 and bf16 uint4b8 / fp16 uint4 T = 4, 16; then the MoE GPU tests of the build (the default changed).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c6; mkdir -p $W/out && tar -xJf .carry-s32/bins6.tar.xz -C $W
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for m in 1 2; do
    W4A16_MOE_RING=$m timeout 60 $W/new/w4a16_bench_moe $W/out/f16_m${m}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null
    W4A16_MOE_RING=$m timeout 60 $W/new/w4a16_bench_moe $W/out/bf16_m${m}_r$r.csv 4,16 bf16 uint4b8 > /dev/null
    W4A16_MOE_RING=$m timeout 60 $W/new/w4a16_bench_moe $W/out/u4_m${m}_r$r.csv 4,16 f16 uint4 > /dev/null
    echo "r$r m$m t=$(($(date +%s)-T0))"
  done
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    kind, m, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        if row['path'] == 'chosen': t[(kind, int(row['T']), m)].append(float(row['fused_us']))
print('%-5s %5s %-26s %-26s %8s' % ('kind', 'T', 'balanced (m1) us', 'round robin (m2) us', 'rr/bal'))
for kind, T in sorted({k[:2] for k in t}):
    a, b = t[(kind, T, 'm1')], t[(kind, T, 'm2')]
    print('%-5s %5d %-26s %-26s %8.3f' % (kind, T, ' '.join('%.2f' % x for x in a), ' '.join('%.2f' % x for x in b), statistics.median(b) / statistics.median(a)))
PY
timeout 240 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_new.log 2>&1; echo "test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran" $W/out/test_new.log | head -8
tar -czf $OUT/call6.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
