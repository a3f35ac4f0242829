#!/usr/bin/env bash
# Session 2026-12-04 stop 33, call 1: the zero point by a second mma (decode_device.cuh: A = magic + q by one lop3 a
# register, then mma with the constant fragment -(magic + z) into the same partials) in two orders ("loops": the raw
# mma of the kP tiles, then their zero mma; "pair": each tile's zero mma right after its raw one) against main
# (e4c79d7). First the GPU tests of "loops" (decode + MoE) and "pair" (decode); then whole processes, rounds
# interleaved: w4a16_bench_moe (fp16 / bf16 uint4b8 T = 1, 4, 16, 64; fp16 uint4 T = 16, 64; 3 rounds) and
# w4a16_bench_gpu (5 layers x M = 1, 2, 4, 8, 16 x fp16 / bf16 x uint4b8 / uint4, every row against f64; 2 rounds).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s33c1; mkdir -p $W/out && tar -xJf .carry-s33/bins1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
( timeout 200 $W/loops/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_loops_moe.log 2>&1; echo "loops moe tests rc=$?" ) &
( timeout 200 $W/loops/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_loops_decode.log 2>&1; echo "loops decode tests rc=$?";
  timeout 150 $W/pair/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_pair_decode.log 2>&1; echo "pair decode tests rc=$?" ) &
wait
for f in $W/out/test_*.log; do echo "$(basename $f): $(grep -E '^\[  (PASSED|FAILED)' $f | tr '\n' ' ')"; grep -E "FAILED|Failure|rel|error" $f | head -8; done
echo "tests t=$(($(date +%s)-T0))"
export W4A16_BENCH_MOE_PATHS=chosen
for r in 1 2 3; do
  for v in base loops pair; do
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
        if row['path'] == 'chosen': t[(kind, int(row['T']), v)].append((float(row['fused_us']), row))
for kind, T in sorted({k[:2] for k in t}):
    base = statistics.median(x[0] for x in t[(kind, T, 'base')])
    cells = []
    for v in ('base', 'loops', 'pair'):
        xs = [x[0] for x in t[(kind, T, v)]]
        cells.append('%s %s (x%.3f)' % (v, ' '.join('%.2f' % x for x in xs), statistics.median(xs) / base))
    print('%-5s T=%-3d ' % (kind, T) + ' | '.join(cells))
PY
ARGS=(--shapes 8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up --ms 1,2,4,8,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  for v in base loops pair; do
    timeout 150 $W/$v/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/dec_${v}_$r.csv > $W/out/dec_${v}_$r.log 2>&1; echo "dec $v r$r rc=$? t=$(($(date +%s)-T0))"
  done
done
for v in loops pair; do
  python3 bench/gpu/ab_compare.py $W/out/dec_base_1.csv,$W/out/dec_base_2.csv $W/out/dec_${v}_1.csv,$W/out/dec_${v}_2.csv > $W/out/ab_$v.md 2>&1
  echo "== base / $v"; grep -E "rows;" $W/out/ab_$v.md; grep -c "| NO |" $W/out/ab_$v.md
done
tar -czf $OUT/call1.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
