#!/usr/bin/env bash
# Stop 45, call 10: the hybrid's switch on the Qwen2.5-0.5B qkv / o layers (decode up to 7 tokens since stop 22) now that
# the decode path streams x at 4..8 tokens there: cuda_decode (the default plans of this stop's build) against
# cuda_prefill at M = 7, 8, 9, fp16 / bf16 x uint4b8 / uint4, 2 interleaved rounds, every row against f64. Carry
# .carry-s45/c8.tar.xz.
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s45c10_out; mkdir -p $O; trap 'tar -czf $R/call10.tar.gz -C $O .' EXIT
W=/tmp/s45c10; mkdir -p $W && tar -xJf .carry-s45/c8.tar.xz -C $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $O/gpu.txt
for r in 1 2; do
  timeout 60 $W/c8/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --shapes qwen0.5b.qkv,qwen0.5b.o --ms 7,8,9 \
    --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $O/switch_$r.csv > $O/switch_$r.log 2>&1 || echo "round $r rc=$?"
done
python3 - <<'PY'
import csv, glob, collections
t = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/s45c10_out/switch_*.csv')):
    for r in csv.DictReader(open(f)):
        if r['kernel'].startswith('cuda_'):
            t[(r['shape'], r['dtype'], r['format'], int(r['m']), r['kernel'].split()[0])].append(float(r['us']))
keys = sorted({k[:4] for k in t})
for k in keys:
    d, p = min(t.get(k + ('cuda_decode',), [0])), min(t.get(k + ('cuda_prefill',), [0]))
    print(f"{k[0]:13s} {k[1]:9s} {k[2]:8s} M={k[3]}  decode {d:6.2f}  prefill {p:6.2f}  decode/prefill {d / p if p else 0:.3f}")
PY
