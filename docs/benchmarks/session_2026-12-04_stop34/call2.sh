#!/usr/bin/env bash
# Session 2026-12-04 stop 34, call 2: bf16's offset-free dequantization ("new") in the MoE ring kernels (per step: the
# step's unit sums of x by tensor cores, one more block barrier, then the math with 128 + q and (128 + z) x the sums
# subtracted per unit partial) and in the bulk decode kernel with the unit sums read at stage start (call 1 read them
# at the end of the math), against main (264aca7). New's decode and MoE GPU tests in parallel; then whole processes,
# 3 rounds interleaved: MoE bf16 uint4b8 / uint4 T = 1, 4, 16, 64 and fp16 uint4b8 T = 16 (control); bulk decode bf16
# uint4b8 / uint4 on 5 layers at M = 1, 4 (default plans).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s34c2; mkdir -p $W/out && tar -xJf .carry-s34/bins2.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 280 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1 &
timeout 280 $W/new/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1 &
wait
for t in moe decode; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure|Expected|Which' $W/out/test_$t.log | head -8; done
export W4A16_BENCH_MOE_PATHS=chosen
SH=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up
for r in 1 2 3; do
  for v in base new; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16u4_${v}_r$r.csv 1,4,16,64 bf16 uint4 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16_${v}_r$r.csv 1,4,16,64 bf16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16_${v}_r$r.csv 16 f16 uint4b8 > /dev/null
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1,4 --dtypes bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/bf_${v}_$r.csv > /dev/null 2>&1
  done
  echo "r$r t=$(($(date +%s)-T0))"
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
    print('%-7s T=%-3d ' % (kind, T) + ' | '.join('%s %s' % (v, ' '.join('%.2f' % x for x in t[(kind, T, v)])) for v in ('base', 'new'))
          + '  new/base %.3f  (%.1f%% -> %.1f%% of 4.4 TB/s)' % (new / base, pct(base), pct(new)))
PY
python3 bench/gpu/ab_compare.py $W/out/bf_base_1.csv,$W/out/bf_base_2.csv,$W/out/bf_base_3.csv $W/out/bf_new_1.csv,$W/out/bf_new_2.csv,$W/out/bf_new_3.csv > $W/out/ab_bf.md 2>&1
echo "== bulk bf16: $(grep -E 'rows;' $W/out/ab_bf.md); rows not ok: $(grep -c '| NO |' $W/out/ab_bf.md)"
grep "cuda_decode" $W/out/ab_bf.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s %s\n", $3, $5, $7, $8, $9, $10, $11}'
tar -czf $OUT/call2.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
