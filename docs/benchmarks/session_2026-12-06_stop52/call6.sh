#!/usr/bin/env bash
# Stop 52 call 6 (the same warm H100): both paths and the hybrid on 8192x8192 uint4b8, fp16 / bf16, M = 9..16.
. scripts/lib/device-env.sh; B=/tmp/s52c4b; S=/tmp/s52c6; mkdir -p $S; nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
[ -x $B/w4a16_bench_gpu ] || { mkdir -p $B; tar -xJf .carry-s52c4/b.tar.xz -C $B; }
timeout 100 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 9,10,11,12,13,14,16 --shapes 8192x8192 \
  --dtypes f16,bf16 --scalars uint4b8 --csv $S/h.csv > /dev/null 2> $S/err.txt || echo "rc=$?"
python3 - $S/h.csv <<'PY' | tee $OUT/summary.txt
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    if r['format'] == 'dense': continue
    t[(r['dtype'], int(r['m']))][r['kernel'].split()[0]] = float(r['us'])
for k in sorted(t): print(k[0], k[1], ' | '.join('%s %.2f' % kv for kv in sorted(t[k].items(), key=lambda x: x[1])))
PY
tar -czf $OUT/data.tar.gz -C $S .
