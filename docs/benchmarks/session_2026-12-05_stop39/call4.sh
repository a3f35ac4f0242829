#!/usr/bin/env bash
# Stop 39, call 4: main 5ee3129 (candidates F and G merged: streamed x in unrolled passes, x windows per K group with the
# measured plans for llama8b.down / o at 9..16 tokens), sm_90a binaries in .carry-s39/main4.tar.xz, against main a2b78f7
# (main3.tar.xz): the merged build's decode and registry GPU tests, then 2 interleaved rounds, 6 layers x M = 9, 12, 16 x
# fp16 / bf16 uint4b8 g = 128 (the default plans), every row against f64; then both paths (decode, prefill) on llama8b.down
# and llama8b.o at M = 8..16 for the hybrid's switch.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s39c4; mkdir -p $W/out && tar -xJf .carry-s39/main3.tar.xz -C $W && tar -xJf .carry-s39/main4.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/main4/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1 &
timeout 200 $W/main4/w4a16_test_gpu_registry --gtest_brief=1 > $W/out/test_registry.log 2>&1 &
wait
for t in decode registry; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_$t.log | head -8; done
SH=8192x8192,llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down,qwen0.5b.gate_up
for r in 1 2; do
  for v in main main4; do
    timeout 120 $W/$v/w4a16_bench_gpu --shapes $SH --ms 9,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 16 --csv $W/out/ab_${v}_$r.csv > /dev/null 2>&1 || echo "$v round $r rc=$?"
  done
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/ab_main_1.csv,$W/out/ab_main_2.csv $W/out/ab_main4_1.csv,$W/out/ab_main4_2.csv > $W/out/ab_main4.md 2>&1
echo "== a2b78f7 -> 5ee3129: $(grep -E 'rows;' $W/out/ab_main4.md); rows not ok: $(grep -c '| NO |' $W/out/ab_main4.md)"
grep "cuda_decode" $W/out/ab_main4.md | awk -F'|' '{printf "%-17s %-9s %-8s M=%-2s %8s %8s %s\n", $3, $4, $5, $7, $8, $9, $10}'
# Both paths on the two layers whose 9..16-token decode plans changed (the hybrid switch table, hybrid_thresholds.hpp,
# sends them to prefill from 11 / 9 tokens): decode and prefill rows in one process, fp16 / bf16 x uint4b8 / uint4.
timeout 150 $W/main4/w4a16_bench_gpu --shapes llama8b.down,llama8b.o --ms 8,9,10,11,12,14,16 --dtypes f16,bf16 --scalars uint4b8,uint4 \
  --no-extra-groups --no-cublas --prefill --csv $W/out/paths.csv > /dev/null 2>&1; echo "paths rc=$? t=$(($(date +%s)-T0))"
python3 - <<'PY'
import csv
t = {}
for r in csv.DictReader(open('/tmp/s39c4/out/paths.csv')):
    t.setdefault((r['shape'], r['dtype'], r['format'], int(r['m'])), {})[r['kernel']] = float(r['us'])
for k in sorted(t):
    d, p = t[k].get('cuda_decode'), t[k].get('cuda_prefill')
    if d and p: print(f"{k[0]:13s} {k[1]:8s} {k[2]:8s} M={k[3]:2d} decode {d:7.2f} prefill {p:7.2f} decode/prefill {d / p:.3f}")
PY
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
