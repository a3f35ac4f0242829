#!/usr/bin/env bash
# Session 2026-12-04 call 2: tune_tma at M = 136 / 160 / 192 (the m blocks past 128 tokens) on the large shapes:
# the 192-token tile (config 28, 3 warpgroups) against the planned tiles (20 bm256, 22 bm128, 23 bm64 occ2,
# 32 bm128 occ2), splits 1..8 reduced in the cluster; the default plan and cuBLAS fp16 in the same run.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins2.tar.xz -C $W
W4A16_PREFILL_TUNE_CONFIGS=28,20,22,23,32 W4A16_PREFILL_TUNE_MS=136,160,192 \
  W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down,llama70b.gate_up,qwen0.5b.gate_up \
  timeout 300 $W/c2/prefill_bench $OUT/call2_tune.csv tune_tma > $OUT/call2_tune.log 2>&1
echo "tune rc=$? t=$(($(date +%s)-T0))"
python3 - $OUT/call2_tune.csv <<'PY'
import csv, sys
best = {}
for r in csv.DictReader(open(sys.argv[1])):
    key = (r['shape'], int(r['M']))
    k = r['kernel']
    if k == 'cublas_f16': best.setdefault(key, {})['cublas'] = (float(r['us']), '')
    elif k == 'cuda_prefill': best.setdefault(key, {})['default'] = (float(r['us']), r['plan'])
    else:
        tile = k.split(':')[1]; sp = k.split(':')[2]
        d = best.setdefault(key, {})
        if tile not in d or float(r['us']) < d[tile][0]: d[tile] = (float(r['us']), sp)
for key in sorted(best):
    d = best[key]
    print(key[0], key[1], ' '.join('%s=%.1f%s' % (t.replace('wgmma_', '').replace('_tma_ei', '').replace('_tma', ''), v[0], (':' + v[1]) if t not in ('default',) else '') for t, v in d.items() if t != 'default'), '| default %.1f %s' % d['default'] if 'default' in d else '')
PY
gzip -9 $OUT/call2_tune.csv
echo "total $(($(date +%s)-T0)) s"
