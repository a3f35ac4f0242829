#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 2 (same binaries as call 1): the hybrid with the dense path off (0) and forced (1)
# on the two Qwen2.5-0.5B layers where call 1 found it faster, fp16 / bf16 x uint4b8 / uint4, M = 1024..4100, two
# interleaved rounds; then the bf16 standing of the default hybrid (dense path off: the table is empty in this build)
# on the ten PERF.md shapes at M = 1024 / 4096 against cuBLAS bf16 (uint4b8). Every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins1.tar.xz -C $W
SH=qwen0.5b.qkv,qwen0.5b.gate_up
for r in 1 2; do for mode in 0 1; do
  W4A16_HYBRID_DENSE_MIN_M=$mode timeout 120 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 \
    --shapes $SH --ms 1024,1536,2048,2560,3072,4096,4100 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/call2_r${r}_dense$mode.csv > $OUT/call2_r${r}_dense$mode.log 2>&1
  echo "round $r mode $mode rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call2_r${r}_dense$mode.log
done; done
python3 - $OUT <<'PY'
import csv, sys, collections, statistics
d = sys.argv[1]
t = collections.defaultdict(lambda: collections.defaultdict(list))
cub = collections.defaultdict(list)
for r in (1, 2):
    for mode in (0, 1):
        for row in csv.DictReader(open('%s/call2_r%d_dense%d.csv' % (d, r, mode))):
            if row['ok'] != '1': print('FAILED', row['kernel'], row['shape'], row['dtype'], row['format'], row['m'])
            if row['kernel'].startswith('cublas'):
                cub[(row['shape'], row['dtype'], int(row['m']))].append(float(row['us']))
            else:
                t[(row['shape'], row['dtype'], row['format'], int(row['m']))]['dense' if mode else 'int4'].append(float(row['us']))
print('%-17s %-8s %-8s %5s %8s %8s %8s %6s %6s %6s' % ('shape', 'dtype', 'format', 'M', 'cublas', 'int4', 'dense', 'int4x', 'densex', 'd/i'))
for key in sorted(t):
    v = t[key]
    cb = statistics.median(cub[(key[0], key[1], key[3])]); i4 = min(v['int4']); de = min(v['dense'])
    print('%-17s %-8s %-8s %5d %8.1f %8.1f %8.1f %6.2f %6.2f %6.2f' % (key + (cb, i4, de, cb / i4, cb / de, de / i4)))
PY
timeout 200 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 --ms 1024,4096 --dtypes bf16 \
  --scalars uint4b8 --csv $OUT/call2_bf16_standing.csv > $OUT/call2_bf16_standing.log 2>&1
echo "bf16 standing rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call2_bf16_standing.log
python3 - $OUT/call2_bf16_standing.csv <<'PY'
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])): t[(r['shape'], int(r['m']))][r['kernel'].split(' ')[0]] = float(r['us'])
for k in sorted(t):
    c = next((v for n, v in t[k].items() if n.startswith('cublas')), None); h = t[k].get('cuda_hybrid')
    if c and h: print('%-18s M=%5d cublas_bf16 %8.1f hybrid %8.1f  x%.2f' % (k[0], k[1], c, h, c / h))
PY
echo "total $(($(date +%s)-T0)) s"
