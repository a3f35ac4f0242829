#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 10: three ring blocks per SM (call 9's Nsight Compute: 4 warps per scheduler, a warp
# issuing every 6.4 cycles, 0.59 IPC per scheduler at T = 16): occ3 = main 6de10dd with __launch_bounds__(256, 3) and
# GEMM 1 as 4-tile steps 3 deep (67 KB a block; ring_three_blocks_per_sm.patch), against main, whole processes, 3 rounds
# interleaved: fp16 uint4b8 T = 1, 4, 16, 64 and bf16 uint4b8 T = 16, 64; then occ3's MoE GPU tests.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c10; mkdir -p $W/out && tar -xJf .carry-s32/bins10.tar.xz -C $W
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for v in main occ3; do
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
    a, b = t[(kind, T, 'main')], t[(kind, T, 'occ3')]
    print('%-5s %4d main %-22s occ3 %-22s %6.3f' % (kind, T, ' '.join('%.2f' % x for x in a), ' '.join('%.2f' % x for x in b), statistics.median(b) / statistics.median(a)))
PY
timeout 150 $W/occ3/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_occ3.log 2>&1; echo "test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran" $W/out/test_occ3.log | head -6
tar -czf $OUT/call10.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
