#!/usr/bin/env bash
# Stop 47, call 5 (H200): the final table (llama8b.o decode up to 16 for both scalar types, after call 4 moved its uint4
# entry from 12) run as the hybrid against both paths at M = 12..16, fp16 / bf16 x uint4b8 / uint4, 2 rounds, against f64.
# Carries: .carry-s47e/b.tar.xz (new/w4a16_bench_gpu of the final build).
. scripts/lib/device-env.sh
O=$OUT; W=/tmp/s47c5; rm -rf $W; mkdir -p $W && tar -xJf .carry-s47e/b.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
for r in 1 2; do
  timeout 100 $W/new/w4a16_bench_gpu --registry cuda_decode,cuda_prefill,cuda_hybrid --shapes llama8b.o \
    --ms 12,13,14,15,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 \
    --csv $O/verify_$r.csv > $O/verify_$r.log 2>&1 || echo "rc=$?"
done
python3 - <<'PY' | tee $O/verify.txt
import csv, collections, os
t, bad = collections.defaultdict(list), 0
for f in ('verify_1.csv', 'verify_2.csv'):
    for r in csv.DictReader(open(os.path.join(os.environ['OUT'], f))):
        if r['kernel'].startswith('cuda_'):
            t[(r['shape'], r['dtype'], r['format'], int(r['m']), r['kernel'].split()[0])].append(float(r['us'])); bad += r['ok'] != '1'
print(f"rows not ok: {bad}")
worst = 0
for k in sorted({k[:4] for k in t}):
    d, p, h = (min(t[k + (n,)]) for n in ('cuda_decode', 'cuda_prefill', 'cuda_hybrid'))
    worst = max(worst, h / min(d, p))
    print(f"{k[0]:13s} {k[1]:9s} {k[2]:8s} M={k[3]:2d}  decode {d:6.2f}  prefill {p:6.2f}  hybrid {h:6.2f}  hybrid/best {h / min(d, p):.3f}")
print(f"worst hybrid/best {worst:.3f}")
PY
