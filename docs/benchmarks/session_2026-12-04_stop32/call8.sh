#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 8 (main d2d8ab0 + the bench's W4A16_BENCH_MOE_BLOCK): (a) the direct path (block 1,
# now folded and round robin) against aligned block 8 at T = 5..16 as whole processes, 3 rounds interleaved, fp16 and
# bf16 uint4b8; (b) the standing: the whole bench (every row) fp16 uint4b8 at the default T list, and the chosen rows
# of bf16 uint4b8 / fp16 uint4 at T = 1, 4, 16, 64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c8; mkdir -p $W/out && tar -xJf .carry-s32/bins8.tar.xz -C $W
for r in 1 2 3; do
  for b in 1 8; do
    for a in f16 bf16; do
      W4A16_BENCH_MOE_PATHS=chosen W4A16_BENCH_MOE_BLOCK=$b timeout 60 $W/new/w4a16_bench_moe $W/out/ab_${a}_b${b}_r$r.csv 5,6,8,12,16 $a uint4b8 > /dev/null
    done
    echo "r$r b$b t=$(($(date +%s)-T0))"
  done
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'ab_*.csv'))):
    _, a, b, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        if row['path'] == 'chosen': t[(a, int(row['T']), b)].append(float(row['fused_us']))
print('%-5s %4s %-24s %-24s %8s' % ('act', 'T', 'block 8 us', 'direct us', 'direct/8'))
for a, T in sorted({k[:2] for k in t}):
    x, y = t[(a, T, 'b8')], t[(a, T, 'b1')]
    print('%-5s %4d %-24s %-24s %8.3f' % (a, T, ' '.join('%.2f' % v for v in x), ' '.join('%.2f' % v for v in y), statistics.median(y) / statistics.median(x)))
PY
timeout 200 $W/new/w4a16_bench_moe $W/out/standing_f16.csv > $W/out/standing_f16.log 2>&1; echo "standing rc=$? t=$(($(date +%s)-T0))"
W4A16_BENCH_MOE_PATHS=chosen timeout 60 $W/new/w4a16_bench_moe $W/out/standing_bf16.csv 1,4,16,64 bf16 uint4b8 > /dev/null
W4A16_BENCH_MOE_PATHS=chosen timeout 60 $W/new/w4a16_bench_moe $W/out/standing_u4.csv 1,4,16,64 f16 uint4 > /dev/null
for f in standing_f16 standing_bf16 standing_u4; do echo "== $f"; grep -E ",chosen," $W/out/$f.csv | cut -d, -f1-3,5,6,8-11; done
tar -czf $OUT/call8.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
