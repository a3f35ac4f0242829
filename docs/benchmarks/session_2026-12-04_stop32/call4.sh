#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 4: the ring kernels' K split (W4A16_MOE_RING_KSPLIT = 1, 2, 4; default 1 here) with
# the balanced and the round-robin grid. new = main + the K split (uncommitted at the call), main = call 2's build.
# MoE GPU tests of new (K split cases), then w4a16_bench_moe chosen rows + ring_ks<q> / ring_rr_ks<q> rows: fp16
# uint4b8 T = 1, 4, 16, 64 (2 rounds, main's chosen row in the same rounds), bf16 uint4b8 and fp16 uint4 T = 1, 4, 16.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c4; mkdir -p $W/out && tar -xJf .carry-s32/bins4.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_new.log 2>&1; echo "test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran" $W/out/test_new.log | head -8
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2; do
  for v in main new; do
    timeout 90 $W/$v/w4a16_bench_moe $W/out/f16_${v}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null; echo "$v r$r rc=$? t=$(($(date +%s)-T0))"
  done
done
timeout 90 $W/new/w4a16_bench_moe $W/out/bf16_new_r1.csv 1,4,16 bf16 uint4b8 > /dev/null
timeout 90 $W/new/w4a16_bench_moe $W/out/u4_new_r1.csv 1,4,16 f16 uint4 > /dev/null
echo "bf16/u4 t=$(($(date +%s)-T0))"
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    kind, v, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        t[(kind, int(row['T']), v, row['path'])].append(float(row['fused_us']))
base = {}
for (kind, T, v, path), xs in t.items():
    if path == 'chosen': base.setdefault((kind, T), {})[v] = min(xs)
for k in sorted(t):
    kind, T, v, path = k
    b = base[(kind, T)].get('main', base[(kind, T)]['new'])
    print('%-5s %5d %-5s %-12s %8.2f  x%.3f of main chosen' % (kind, T, v, path, min(t[k]), min(t[k]) / b))
PY
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
