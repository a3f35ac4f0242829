#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 9 (main with the small kernel's 4-tile bucket from 9 tokens): every decode GPU test;
# main against call 8's build (both defaults) on the Qwen2.5-0.5B layers at M = 8..16, fp16 / bf16 x uint4b8 / uint4 (g128),
# 3 interleaved rounds; tinygemm and torch.matmul at M = 8..16 in the same call.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c9; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins9.tar.xz -C $W/bin
timeout 150 $W/bin/new/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $W/out/decode_test.log | head -4
ARGS=(--shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down --ms 8,9,10,12,14,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2 3; do
  timeout 60 $W/bin/old/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  timeout 60 $W/bin/new/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv,$W/out/old_3.csv $W/out/new_1.csv,$W/out/new_2.csv,$W/out/new_3.csv > $W/out/ab.md 2>&1
grep -E "qwen0.5b.(qkv|o) |rows;" $W/out/ab.md
PYTHONUNBUFFERED=1 timeout 150 python3 bench/gpu/peers_torch.py --ms 8,9,10,12,14,16 --csv $W/out/peers_torch.csv > $W/out/peers.log 2>&1; echo "peers rc=$? t=$(($(date +%s)-T0))"
python3 - $W/out <<'PY'
import csv, os, sys
d = sys.argv[1]
tg = {(r['shape'], int(r['m'])): float(r['us']) for r in csv.DictReader(open(os.path.join(d, 'peers_torch.csv'))) if r['kernel'].startswith('tinygemm')}
best = {}
for i in (1, 2, 3):
    for r in csv.DictReader(open(os.path.join(d, 'new_%d.csv' % i))):
        if r['kernel'] == 'cuda_decode' and r['dtype'] == 'bfloat16' and r['format'] == 'uint4b8':
            k = (r['shape'], int(r['m'])); best[k] = min(best.get(k, 1e9), float(r['us']))
for k in sorted(best):
    if k in tg: print('%-18s M=%2d decode bf16 %6.2f tinygemm %6.2f x%.2f' % (k[0], k[1], best[k], tg[k], tg[k] / best[k]))
PY
tar -czf $OUT/call9.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
