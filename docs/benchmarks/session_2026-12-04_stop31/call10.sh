#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 10: the Qwen2.5-0.5B layers at 5..8 tokens, main's default (bulk up to 6 tokens on
# layers < 8 MB, then the small kernel on qkv / o and the streaming kernel on gate_up / down) against the small kernel's
# 4-tile bucket (W4A16_DECODE_SMALL_T=4), the bulk kernel (=1, its automatic plan) and the streaming kernel alone
# (W4A16_DECODE_BULK=0 W4A16_DECODE_SMALL=0), fp16 / bf16 uint4b8 g128, 2 interleaved rounds, every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c10; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins10.tar.xz -C $W/bin
B=$W/bin/w4a16_bench_gpu
ARGS=(--shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down --ms 5,6,7,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  timeout 60 $B "${ARGS[@]}" --csv $W/out/default_$r.csv > /dev/null 2>&1
  W4A16_DECODE_SMALL_T=4 timeout 60 $B "${ARGS[@]}" --csv $W/out/smallT4_$r.csv > /dev/null 2>&1
  W4A16_DECODE_BULK=1 timeout 60 $B "${ARGS[@]}" --csv $W/out/bulk_$r.csv > /dev/null 2>&1
  W4A16_DECODE_BULK=0 W4A16_DECODE_SMALL=0 timeout 60 $B "${ARGS[@]}" --csv $W/out/streaming_$r.csv > /dev/null 2>&1
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 - $W/out <<'PY'
import csv, glob, os, sys, collections
d = sys.argv[1]
t = collections.defaultdict(dict)
for p in glob.glob(os.path.join(d, '*_[12].csv')):
    v = os.path.basename(p).rsplit('_', 1)[0]
    for r in csv.DictReader(open(p)):
        if r['kernel'] != 'cuda_decode': continue
        k = (r['shape'], r['dtype'], int(r['m']))
        if float(r['us']) < t[k].get(v, (1e9, ''))[0]: t[k][v] = (float(r['us']), r['plan'][:60])
vs = ['default', 'smallT4', 'bulk', 'streaming']
print('%-17s %-9s %2s ' % ('shape', 'dtype', 'M') + ' '.join('%9s' % v for v in vs) + '   default plan')
for k in sorted(t):
    print('%-17s %-9s %2d ' % k + ' '.join('%9.2f' % t[k].get(v, (float('nan'), ''))[0] for v in vs) + '   ' + t[k].get('default', (0, ''))[1])
PY
tar -czf $OUT/call10.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
