#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 8: the narrowest peer margin (tinygemm against the decode kernel at qwen0.5b.o M = 16,
# 1.01x in stop 30): the small layers' decode plans at M = 9..16 forced (the small kernel's tile bucket T = 4 / 8 / 16,
# the streaming kernel, the bulk kernel) against main's default, fp16 / bf16 (uint4b8 g128), 2 interleaved rounds; then
# tinygemm and torch.matmul at M = 12 / 16 (bench/gpu/peers_torch.py) in the same call.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c8; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins8.tar.xz -C $W/bin
B=$W/bin/w4a16_bench_gpu
ARGS=(--shapes qwen0.5b.o,qwen0.5b.qkv --ms 9,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --decode-max-m 16)
for r in 1 2; do
  timeout 60 $B "${ARGS[@]}" --csv $W/out/default_$r.csv > /dev/null 2>&1
  for t in 4 8 16; do W4A16_DECODE_SMALL_T=$t timeout 60 $B "${ARGS[@]}" --no-cublas --csv $W/out/smallT${t}_$r.csv > /dev/null 2>&1; done
  W4A16_DECODE_SMALL=0 timeout 60 $B "${ARGS[@]}" --no-cublas --csv $W/out/streaming_$r.csv > /dev/null 2>&1
  W4A16_DECODE_BULK=1 timeout 60 $B "${ARGS[@]}" --no-cublas --csv $W/out/bulk_$r.csv > /dev/null 2>&1
  echo "round $r t=$(($(date +%s)-T0))"
done
PYTHONUNBUFFERED=1 timeout 150 python3 bench/gpu/peers_torch.py --ms 12,16 --csv $W/out/peers_torch.csv > $W/out/peers.log 2>&1; echo "peers rc=$? t=$(($(date +%s)-T0))"
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections
d = sys.argv[1]
t = collections.defaultdict(dict)
for p in glob.glob(os.path.join(d, '*_[12].csv')):
    v = os.path.basename(p).rsplit('_', 1)[0]
    for r in csv.DictReader(open(p)):
        if r['kernel'] != 'cuda_decode': continue
        k = (r['shape'], r['dtype'], int(r['m']))
        t[k][v] = min(t[k].get(v, (1e9, ''))[0], float(r['us'])), r['plan'] if 'plan' in r else ''
peers = {}
for r in csv.DictReader(open(os.path.join(d, 'peers_torch.csv'))):
    if r['kernel'].startswith('tinygemm'): peers[(r['shape'], int(r['m']))] = float(r['us'])
vs = ['default', 'smallT4', 'smallT8', 'smallT16', 'streaming', 'bulk']
print('%-14s %-9s %3s ' % ('shape', 'dtype', 'M') + ' '.join('%9s' % v for v in vs) + '  tinygemm(bf16)')
for k in sorted(t):
    print('%-14s %-9s %3d ' % k + ' '.join('%9.2f' % t[k].get(v, (float('nan'),))[0] for v in vs) + '  %.2f' % peers.get((k[0], k[2]), float('nan')))
PY
tar -czf $OUT/call8.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
