#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 11: the ring kernel's copy side trimmed (trim = main 6de10dd + whole steps copied
# without per-tile bounds at immediate offsets, items advanced without divisions: ~95 fewer instructions an 8-tile step
# of GEMM 1, ~600 -> ~505) against main, whole processes, 3 rounds interleaved: fp16 uint4b8 T = 1, 4, 16, 64 and bf16
# uint4b8 T = 16, 64; then trim's MoE GPU tests.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c11; mkdir -p $W/out && tar -xJf .carry-s32/bins11.tar.xz -C $W
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for v in main trim; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/f16_${v}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/bf16_${v}_r$r.csv 16,64 bf16 uint4b8 > /dev/null
    echo "r$r $v t=$(($(date +%s)-T0))"
  done
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    kind, v, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        if row['path'] == 'chosen': t[(kind, int(row['T']), v)].append(float(row['fused_us']))
for kind, T in sorted({k[:2] for k in t}):
    a, b = t[(kind, T, 'main')], t[(kind, T, 'trim')]
    print('%-5s %4d main %-22s trim %-22s %6.3f' % (kind, T, ' '.join('%.2f' % x for x in a), ' '.join('%.2f' % x for x in b), statistics.median(b) / statistics.median(a)))
PY
timeout 150 $W/trim/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_trim.log 2>&1; echo "test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran" $W/out/test_trim.log | head -6
tar -czf $OUT/call11.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
