#!/usr/bin/env bash
# Session 2026-12-04 stop 33, call 4: the final MoE change ("new": tile pairs with one scale / zero entry and one fp32
# partial per pair in the uint4 ring kernels only, g >= 128; uint4b8 kernels SASS-identical to main) against main
# (e4c79d7): new's MoE GPU tests, then whole processes, 3 rounds interleaved: fp16 / bf16 uint4 T = 1, 4, 16, 64 and
# fp16 / bf16 uint4b8 T = 16 (controls: the same kernels).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s33c4; mkdir -p $W/out && tar -xJf .carry-s33/bins4.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1; echo "moe tests rc=$? t=$(($(date +%s)-T0))"
grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_moe.log | head -8
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for v in base new; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16u4_${v}_r$r.csv 1,4,16,64 f16 uint4 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16u4_${v}_r$r.csv 1,4,16,64 bf16 uint4 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16_${v}_r$r.csv 16 f16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16_${v}_r$r.csv 16 bf16 uint4b8 > /dev/null
  done
  echo "moe r$r t=$(($(date +%s)-T0))"
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
mb = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'moe_*.csv'))):
    _, kind, v, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        if row['path'] == 'chosen':
            t[(kind, int(row['T']), v)].append(float(row['fused_us']))
            mb[(kind, int(row['T']))] = float(row.get('touched_MB') or 0)
for kind, T in sorted({k[:2] for k in t}):
    base = statistics.median(t[(kind, T, 'base')]); new = statistics.median(t[(kind, T, 'new')])
    pct = lambda us: 100 * mb[(kind, T)] * 1e6 / (us * 1e-6) / 4.4e12
    print('%-6s T=%-3d ' % (kind, T) + ' | '.join('%s %s' % (v, ' '.join('%.2f' % x for x in t[(kind, T, v)])) for v in ('base', 'new'))
          + '  new/base %.3f  (%.1f%% -> %.1f%% of 4.4 TB/s)' % (new / base, pct(base), pct(new)))
PY
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
