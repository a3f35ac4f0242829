#!/usr/bin/env bash
# Stop 46, call 3: the hybrid's switch with this stop's H100-class column (c9659f8): the registry GPU tests of the new
# build, then cuda_decode, cuda_prefill and cuda_hybrid on qwen0.5b.qkv / o at M = 7..12 and 16, fp16 / bf16 x uint4b8 /
# uint4, 2 interleaved rounds, every row against f64 (on an H200: the data for its own column; on an H100: the hybrid
# should follow the decode path up to 12). Carry: .carry-s46/g2.tar.xz (w4a16_bench_gpu, w4a16_test_gpu_registry).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s46c3_out; mkdir -p $O; trap 'tar -czf $R/call3.tar.gz -C $O .' EXIT
W=/tmp/s46c3; rm -rf $W; mkdir -p $W && tar -xJf .carry-s46/g2.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
timeout 150 $W/g2/w4a16_test_gpu_registry --gtest_brief=1 > $O/test_registry.log 2>&1; grep -E '^\[  (PASSED|FAILED)' $O/test_registry.log
for r in 1 2; do
  timeout 120 $W/g2/w4a16_bench_gpu --registry cuda_decode,cuda_prefill,cuda_hybrid --shapes qwen0.5b.qkv,qwen0.5b.o \
    --ms 7,8,9,10,11,12,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 \
    --csv $O/switch_$r.csv > $O/switch_$r.log 2>&1 || echo "round $r rc=$?"
done
echo "switch t=$(($(date +%s)-T0))"
python3 - <<'PY' | tee $O/switch.txt
import csv, glob, collections
t, bad = collections.defaultdict(list), 0
for f in sorted(glob.glob('/tmp/s46c3_out/switch_*.csv')):
    for r in csv.DictReader(open(f)):
        if r['kernel'].startswith('cuda_'):
            t[(r['shape'], r['dtype'], r['format'], int(r['m']), r['kernel'].split()[0])].append(float(r['us']))
            bad += r['ok'] != '1'
print(f"rows not ok: {bad}")
for k in sorted({k[:4] for k in t}):
    d, p, h = (min(t.get(k + (n,), [0])) for n in ('cuda_decode', 'cuda_prefill', 'cuda_hybrid'))
    print(f"{k[0]:13s} {k[1]:9s} {k[2]:8s} M={k[3]:2d}  decode {d:5.2f}  prefill {p:5.2f}  hybrid {h:5.2f}  d/p {d / p:.3f}  hybrid/best {h / min(d, p):.3f}")
PY
echo "done t=$(($(date +%s)-T0))"
