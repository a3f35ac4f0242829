#!/usr/bin/env bash
# Session 2026-12-04 stop 33, call 2: the MoE ring kernel with tile pairs sharing one fp32 partial where a group spans
# two tiles (g >= 128, channelwise; g = 64 moves to the half-tile variant): "share1" reads one scale / zero entry per
# pair (entries still copied per tile), "share2" also copies one entry per pair; against main (e4c79d7). First share2's
# MoE GPU tests (with a new odd-tile-count channelwise case); then whole processes, 3 rounds interleaved: fp16 / bf16
# uint4b8 T = 1, 4, 16, 64 and fp16 uint4 T = 16, 64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s33c2; mkdir -p $W/out && tar -xJf .carry-s33/bins2.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/share2/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_share2_moe.log 2>&1; echo "share2 moe tests rc=$? t=$(($(date +%s)-T0))"
grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_share2_moe.log | head -10
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for v in base share1 share2; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16_${v}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16_${v}_r$r.csv 1,4,16,64 bf16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16u4_${v}_r$r.csv 16,64 f16 uint4 > /dev/null
  done
  echo "moe r$r t=$(($(date +%s)-T0))"
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'moe_*.csv'))):
    _, kind, v, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        if row['path'] == 'chosen': t[(kind, int(row['T']), v)].append(float(row['fused_us']))
for kind, T in sorted({k[:2] for k in t}):
    base = statistics.median(t[(kind, T, 'base')])
    print('%-5s T=%-3d ' % (kind, T) + ' | '.join('%s %s (x%.3f)' % (v, ' '.join('%.2f' % x for x in t[(kind, T, v)]), statistics.median(t[(kind, T, v)]) / base) for v in ('base', 'share1', 'share2')))
PY
tar -czf $OUT/call2.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
