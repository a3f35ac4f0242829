#!/usr/bin/env bash
# Stop 46, call 2: call 1 found every W4A16Prepared* call failing with std::bad_cast (the review commit's layout_views);
# with the fix (2dc47b7):
#   1. pytest with CUDA over every Python test;
#   2. the hybrid's switch: cuda_decode against cuda_prefill on qwen0.5b.qkv / o at M = 7..12 and on qwen0.5b.gate_up /
#      llama8b.o at M = 8..10, fp16 / bf16 x uint4b8 / uint4, 2 interleaved rounds, every row against f64;
#   3. moe_order.py (W4A16MoE / W4A16PreparedMoE / the prepared module over one buffer, in alternation).
# Carries: .carry-s46/g1.tar.xz (w4a16_bench_gpu of main 1ca310b: no kernel changed since), .carry-s46/py.tar.xz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s46c2_out; mkdir -p $O; trap 'tar -czf $R/call2.tar.gz -C $O .' EXIT
W=/tmp/s46c2; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s46/py.tar.xz -C $W/py && tar -xJf .carry-s46/g1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
PYTHONPATH=$W/py timeout 300 python3 -m pytest -q -p no:cacheprovider -rs python/tests > $O/pytest_gpu.log 2>&1
echo "pytest t=$(($(date +%s)-T0))"; grep -E "^FAILED|passed|failed" $O/pytest_gpu.log | tail -8
for r in 1 2; do
  timeout 90 $W/g1/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --shapes qwen0.5b.qkv,qwen0.5b.o --ms 7,8,9,10,11,12 \
    --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $O/switch_a$r.csv > $O/switch_a$r.log 2>&1 || echo "round $r a rc=$?"
  timeout 90 $W/g1/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --shapes qwen0.5b.gate_up,llama8b.o --ms 8,9,10 \
    --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $O/switch_b$r.csv > $O/switch_b$r.log 2>&1 || echo "round $r b rc=$?"
done
echo "switch t=$(($(date +%s)-T0))"
python3 - <<'PY' | tee $O/switch.txt
import csv, glob, collections
t, bad = collections.defaultdict(list), 0
for f in sorted(glob.glob('/tmp/s46c2_out/switch_*.csv')):
    for r in csv.DictReader(open(f)):
        if r['kernel'].startswith('cuda_'):
            t[(r['shape'], r['dtype'], r['format'], int(r['m']), r['kernel'].split()[0])].append(float(r['us']))
            bad += r['ok'] != '1'
print(f"rows not ok: {bad}")
for k in sorted({k[:4] for k in t}):
    d, p = min(t.get(k + ('cuda_decode',), [0])), min(t.get(k + ('cuda_prefill',), [0]))
    print(f"{k[0]:16s} {k[1]:9s} {k[2]:8s} M={k[3]:2d}  decode {d:6.2f}  prefill {p:6.2f}  decode/prefill {d / p if p else 0:.3f}")
PY
PYTHONPATH=$W/py timeout 200 python3 docs/benchmarks/session_2026-12-05_stop46/moe_order.py > $O/moe_order.txt 2>&1
tail -4 $O/moe_order.txt; echo "done t=$(($(date +%s)-T0))"
