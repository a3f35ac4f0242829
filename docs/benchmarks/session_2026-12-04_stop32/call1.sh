#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 1: where the MoE decode paths' time goes, and two ring shapes.
# Three builds with -DW4A16_DIAG_MOE_STAGES=ON (timing-only stage rows: GEMM 1 alone, GEMM 1 + 2, the whole chain):
#   a = main (1eac9bf+cmake option), b = GEMM 2's shallow ring 4 slots deep (3: all 3 steps of K = 768 before the wait),
#   c = b + GEMM 1 as 4-tile steps 4 slots deep (was 8-tile steps, 2 slots: 12 tiles in flight per warp instead of 8).
# MoE GPU tests of b and c, then w4a16_bench_moe (chosen paths only) T = 1, 4, 16, 64 fp16 uint4b8, 2 interleaved
# rounds a b c, then bf16 uint4b8 and fp16 uint4 (T = 1, 4, 16), one round.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c1; mkdir -p $W/out && tar -xJf .carry-s32/bins1.tar.xz -C $W
for v in b c; do
  timeout 150 $W/$v/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_$v.log 2>&1; echo "test $v rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|FAILED" $W/out/test_$v.log | head -4
done
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2; do
  for v in a b c; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/f16_${v}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null 2>$W/out/err_${v}_r$r.log
    echo "$v r$r rc=$? t=$(($(date +%s)-T0))"
  done
done
for v in a b c; do
  timeout 60 $W/$v/w4a16_bench_moe $W/out/bf16_${v}_r1.csv 1,4,16 bf16 uint4b8 > /dev/null 2>>$W/out/err_${v}_r1.log
  timeout 60 $W/$v/w4a16_bench_moe $W/out/u4_${v}_r1.csv 1,4,16 f16 uint4 > /dev/null 2>>$W/out/err_${v}_r1.log
  echo "$v bf16/u4 t=$(($(date +%s)-T0))"
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    kind, v, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        t[(kind, int(row['T']), row['path'], v)].append((float(row['fused_us']), row['rel_err_vs_cublas'], row['cublas_loop_us']))
print('%-5s %5s %-8s %22s %22s %22s %7s %7s' % ('kind', 'T', 'path', 'a us (err)', 'b us', 'c us', 'b/a', 'c/a'))
for k in sorted({k[:3] for k in t}):
    vals = {v: t.get(k + (v,), []) for v in 'abc'}
    med = {v: sorted(x[0] for x in vals[v])[len(vals[v]) // 2] if vals[v] else float('nan') for v in 'abc'}
    err = {v: vals[v][0][1] if vals[v] else '-' for v in 'abc'}
    print('%-5s %5d %-8s %12.2f %9s %12.2f %9s %12.2f %9s %7.3f %7.3f' % (k + (med['a'], err['a'], med['b'], err['b'], med['c'], err['c'], med['b'] / med['a'], med['c'] / med['a'])))
PY
tar -czf $OUT/call1.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
