#!/usr/bin/env bash
# Stop 46, call 6: the final build (main after the hybrid's H200 column moved to 8 on qwen0.5b.qkv / o and the late-PDL
# knob): the registry, decode and MoE GPU tests and pytest with CUDA (all at once: correctness only), then the hybrid
# against both paths on qwen0.5b.qkv / o at M = 7, 8, 9 (fp16 / bf16 x uint4b8 / uint4, one round, every row against
# f64). Carries: .carry-s46/g4.tar.xz (4 binaries), .carry-s46/py.tar.xz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s46c6_out; mkdir -p $O; trap 'tar -czf $R/call6.tar.gz -C $O .' EXIT
W=/tmp/s46c6; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s46/py.tar.xz -C $W/py && tar -xJf .carry-s46/g4.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
for t in registry decode moe; do timeout 200 $W/g4/w4a16_test_gpu_$t --gtest_brief=1 > $O/test_$t.log 2>&1 & done
PYTHONPATH=$W/py timeout 240 python3 -m pytest -q -p no:cacheprovider python/tests > $O/pytest_gpu.log 2>&1
wait
for t in registry decode moe; do echo "$t: $(grep -E '^\[  (PASSED|FAILED)' $O/test_$t.log | tr '\n' ' ')"; done
grep -E "^FAILED|passed|failed" $O/pytest_gpu.log | tail -5; echo "tests t=$(($(date +%s)-T0))"
timeout 90 $W/g4/w4a16_bench_gpu --registry cuda_decode,cuda_prefill,cuda_hybrid --shapes qwen0.5b.qkv,qwen0.5b.o --ms 7,8,9 \
  --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $O/switch.csv > $O/switch.log 2>&1 || echo "switch rc=$?"
python3 - <<'PY' | tee $O/switch.txt
import csv, collections
t, bad = collections.defaultdict(list), 0
for r in csv.DictReader(open('/tmp/s46c6_out/switch.csv')):
    if r['kernel'].startswith('cuda_'):
        t[(r['shape'], r['dtype'], r['format'], int(r['m']), r['kernel'].split()[0])].append(float(r['us'])); bad += r['ok'] != '1'
print(f"rows not ok: {bad}")
for k in sorted({k[:4] for k in t}):
    d, p, h = (min(t[k + (n,)]) for n in ('cuda_decode', 'cuda_prefill', 'cuda_hybrid'))
    print(f"{k[0]:13s} {k[1]:9s} {k[2]:8s} M={k[3]:2d}  decode {d:5.2f}  prefill {p:5.2f}  hybrid {h:5.2f}  hybrid/best {h / min(d, p):.3f}")
PY
echo "done t=$(($(date +%s)-T0))"
