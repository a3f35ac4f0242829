#!/usr/bin/env bash
# Session 2026-12-04 stop 33, call 3: "new" = main e4c79d7 + the MoE ring's tile pairs (one partial and one scale / zero
# entry copied per pair where a group spans two tiles; steps padded to 128 bytes) + uint4 zero constants by one byte
# permute and one lop3 each in the decode and MoE ring kernels (dequant_consts.hpp, the prefill kernel's form: the same
# bits); against main. First new's decode, MoE and registry GPU tests; then whole processes, rounds interleaved:
# w4a16_bench_moe (fp16 / bf16 uint4b8 T = 1, 4, 16, 64, fp16 / bf16 uint4 T = 16, 64; 3 rounds) and w4a16_bench_gpu
# (5 layers x M = 1, 2, 4, 8, 16 x fp16 / bf16 x uint4b8 / uint4, every row against f64; 2 rounds).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s33c3; mkdir -p $W/out && tar -xJf .carry-s33/bins3.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
( timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1; echo "moe tests rc=$?" ) &
( timeout 200 $W/new/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1; echo "decode tests rc=$?";
  timeout 100 $W/new/w4a16_test_gpu_registry --gtest_brief=1 > $W/out/test_registry.log 2>&1; echo "registry tests rc=$?" ) &
wait
for f in $W/out/test_*.log; do echo "$(basename $f): $(grep -E '^\[  (PASSED|FAILED)' $f | tr '\n' ' ')"; grep -E "FAILED|Failure" $f | head -6; done
echo "tests t=$(($(date +%s)-T0))"
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for v in base new; do
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16_${v}_r$r.csv 1,4,16,64 f16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16_${v}_r$r.csv 1,4,16,64 bf16 uint4b8 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_f16u4_${v}_r$r.csv 16,64 f16 uint4 > /dev/null
    timeout 60 $W/$v/w4a16_bench_moe $W/out/moe_bf16u4_${v}_r$r.csv 16,64 bf16 uint4 > /dev/null
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
    print('%-6s T=%-3d ' % (kind, T) + ' | '.join('%s %s (x%.3f)' % (v, ' '.join('%.2f' % x for x in t[(kind, T, v)]), statistics.median(t[(kind, T, v)]) / base) for v in ('base', 'new')))
PY
ARGS=(--shapes 8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up --ms 1,2,4,8,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  for v in base new; do
    timeout 150 $W/$v/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/dec_${v}_$r.csv > $W/out/dec_${v}_$r.log 2>&1; echo "dec $v r$r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 bench/gpu/ab_compare.py $W/out/dec_base_1.csv,$W/out/dec_base_2.csv $W/out/dec_new_1.csv,$W/out/dec_new_2.csv > $W/out/ab_dec.md 2>&1
grep -E "rows;" $W/out/ab_dec.md; echo "rows not ok: $(grep -c '| NO |' $W/out/ab_dec.md)"
python3 - $W/out/ab_dec.md <<'PY'
import sys, statistics, collections
r = collections.defaultdict(list)
for l in open(sys.argv[1]):
    c = [x.strip() for x in l.split('|')]
    if len(c) > 10 and c[1] == 'cuda_decode': r[(c[3], c[4])].append(float(c[9]))
for k, v in sorted(r.items()): print(k, 'old/new median %.3f min %.3f max %.3f (%d rows)' % (statistics.median(v), min(v), max(v), len(v)))
PY
tar -czf $OUT/call3.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
