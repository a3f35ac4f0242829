#!/usr/bin/env bash
# Session 2026-12-04 stop 34, call 3: the offset-free bf16 MoE ring without call 2's extra barrier. "new": the x copies
# run one step ahead of the weights (one more x slot, bf16 only), so each step's warps make the NEXT step's unit sums
# into the other of two buffers and that step's own barrier publishes them; the zero shift pinned (call 2's bulk loop
# re-derived it from the thread index); unit sums in unit order (the same bits in every path: call 2 failed the
# folded-vs-unfolded equality). "diag" (MoE only, timing only, wrong results): new without any unit sums, i.e. what the
# shorter dequantization alone buys. New's MoE GPU tests; then whole processes, 2 rounds interleaved: MoE bf16 uint4b8 /
# uint4 T = 4, 16, 64 (base, new, diag); bulk decode bf16 uint4b8 / uint4 M = 1 on 3 layers (base, new).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s34c3; mkdir -p $W/out && tar -xJf .carry-s34/bins3.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1; echo "moe tests rc=$? t=$(($(date +%s)-T0))"
grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_moe.log | head -8
export W4A16_BENCH_MOE_PATHS=chosen
SH=8192x8192,llama70b.gate_up,qwen0.5b.gate_up
for r in 1 2; do
  for v in base new diag; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16u4_${v}_r$r.csv 4,16,64 bf16 uint4 > /dev/null 2>&1
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16_${v}_r$r.csv 4,16,64 bf16 uint4b8 > /dev/null 2>&1
    [ $v = diag ] || timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1 --dtypes bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/bf_${v}_$r.csv > /dev/null 2>&1
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
    base = statistics.median(t[(kind, T, 'base')])
    pct = lambda us: 100 * mb[(kind, T)] * 1e6 / (us * 1e-6) / 4.4e12
    print('%-7s T=%-3d ' % (kind, T) + ' | '.join('%s %s (%.3f)' % (v, ' '.join('%.2f' % x for x in t[(kind, T, v)]), statistics.median(t[(kind, T, v)]) / base) for v in ('base', 'new', 'diag'))
          + '  base %.1f%%' % pct(base))
PY
python3 bench/gpu/ab_compare.py $W/out/bf_base_1.csv,$W/out/bf_base_2.csv $W/out/bf_new_1.csv,$W/out/bf_new_2.csv > $W/out/ab_bf.md 2>&1
grep "cuda_decode" $W/out/ab_bf.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s %s\n", $3, $5, $7, $8, $9, $10, $11}'
tar -czf $OUT/call3.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
