#!/usr/bin/env bash
# Session 2026-12-04 stop 34, call 5: call 4 put the MoE ring's loop at ~1.2 eligible warps per scheduler and showed
# the shorter (offset-free) dequantization adding stall cycles per instruction: the loop waits on dependent mma, not on
# issue. "new" (main + this): two accumulator chains per partial (words 2h and 2h + 1 of a tile into separate fp32
# chains, summed at the group's end; mma_pair / scale_group kSplit), in the MoE ring (every variant) and the bulk decode
# kernel at 1..8 tokens (g >= 64). New's MoE and decode GPU tests (bulk, every configuration) in parallel; then whole
# processes, 2 rounds interleaved: MoE fp16 / bf16 uint4b8 / uint4 T = 4, 16, 64; bulk decode fp16 / bf16 uint4b8 /
# uint4 M = 1, 4 on 3 layers.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s34c5; mkdir -p $W/out && tar -xJf .carry-s34/bins5.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 150 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1 &
timeout 150 $W/new/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*:Decode.EveryConfigurationM1To16:Decode.Bf16OneSignedActivations' > $W/out/test_decode.log 2>&1 &
wait
for t in moe decode; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_$t.log | head -6; done
export W4A16_BENCH_MOE_PATHS=chosen
SH=8192x8192,llama70b.gate_up,qwen0.5b.gate_up
for r in 1 2; do
  for v in base new; do
    for dt in f16 bf16; do for st in uint4b8 uint4; do
      timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_${dt}${st}_${v}_r$r.csv 4,16,64 $dt $st > /dev/null 2>&1
    done; done
    timeout 150 $W/$v/w4a16_bench_gpu --shapes $SH --ms 1,4 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $W/out/dec_${v}_$r.csv > /dev/null 2>&1
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
    print('%-11s T=%-3d ' % (kind, T) + ' | '.join('%s %s' % (v, ' '.join('%.2f' % x for x in t[(kind, T, v)])) for v in ('base', 'new'))
          + '  new/base %.3f  (%.1f%% -> %.1f%% of 4.4 TB/s)' % (new / base, pct(base), pct(new)))
PY
python3 bench/gpu/ab_compare.py $W/out/dec_base_1.csv,$W/out/dec_base_2.csv $W/out/dec_new_1.csv,$W/out/dec_new_2.csv > $W/out/ab_dec.md 2>&1
echo "== decode: $(grep -E 'rows;' $W/out/ab_dec.md); rows not ok: $(grep -c '| NO |' $W/out/ab_dec.md)"
grep "cuda_decode" $W/out/ab_dec.md | awk -F'|' '{printf "%-17s %-9s %-8s M=%-2s %8s %8s %s\n", $3, $4, $5, $7, $8, $9, $10}'
tar -czf $OUT/call5.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
