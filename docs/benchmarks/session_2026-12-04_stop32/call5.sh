#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 5: the bulk-copy MoE decode kernel (moe_bulk.cuh, W4A16_MOE_RING=3 / 4), first contact.
# MoE GPU tests (bulk cases: bit-equal to the ring kernel), then w4a16_bench_moe (built with -DW4A16_DIAG_MOE_STAGES=ON:
# stage rows for the ring and the bulk kernel) chosen rows + ring_rr / bulk / bulk_rr: fp16 uint4b8 T = 1, 4, 16, 64
# (2 rounds), bf16 uint4b8 and fp16 uint4 T = 1, 4, 16.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c5; mkdir -p $W/out && tar -xJf .carry-s32/bins5.tar.xz -C $W
timeout 240 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_new.log 2>&1; echo "test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran|Failure|differs" $W/out/test_new.log | head -12
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2; do
  timeout 90 $W/new/w4a16_bench_moe $W/out/f16_new_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null; echo "r$r rc=$? t=$(($(date +%s)-T0))"
done
timeout 90 $W/new/w4a16_bench_moe $W/out/bf16_new_r1.csv 1,4,16 bf16 uint4b8 > /dev/null; echo "bf16 rc=$?"
timeout 90 $W/new/w4a16_bench_moe $W/out/u4_new_r1.csv 1,4,16 f16 uint4 > /dev/null; echo "u4 rc=$? t=$(($(date +%s)-T0))"
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections
t = collections.defaultdict(list); err = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    kind = os.path.basename(p).split('_')[0]
    for row in csv.DictReader(open(p)):
        t[(kind, int(row['T']), row['path'])].append(float(row['fused_us'])); err[(kind, int(row['T']), row['path'])] = row['rel_err_vs_cublas']
for k in sorted(t):
    b = min(t[(k[0], k[1], 'chosen')])
    print('%-5s %5d %-13s %8.2f  x%.3f of chosen  err %s' % (k + (min(t[k]), min(t[k]) / b, err[k])))
PY
tar -czf $OUT/call5.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
