#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 1 (the hybrid's transient dense path): the registry GPU tests (the new
# GpuDense / GpuGraph dense tests among them); the fp16 uint4b8 hybrid with the dense path off (W4A16_HYBRID_DENSE_MIN_M=0)
# and forced from the prefill threshold on (=1), on the six PERF.md layers of <= 64 MB fp16, cuBLAS fp16 in each process,
# every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins1.tar.xz -C $W
timeout 150 $W/new/w4a16_test_gpu_registry --gtest_brief=1 > $OUT/call1_w4a16_test_gpu_registry.log 2>&1
echo "registry tests rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|gpu dense|gpu claims" $OUT/call1_w4a16_test_gpu_registry.log | head -20
SH=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.o,llama8b.qkv
for mode in 0 1; do
  W4A16_HYBRID_DENSE_MIN_M=$mode timeout 200 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 \
    --shapes $SH --ms 256,520,1024,2050,4096 --dtypes f16 --scalars uint4b8 --csv $OUT/call1_dense$mode.csv > $OUT/call1_dense$mode.log 2>&1
  echo "mode $mode rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call1_dense$mode.log
done
python3 - $OUT/call1_dense0.csv $OUT/call1_dense1.csv <<'PY'
import csv, sys, collections
def load(p):
    t = collections.defaultdict(dict)
    for r in csv.DictReader(open(p)):
        t[(r['shape'], int(r['m']))][r['kernel'].split(' ')[0]] = (float(r['us']), r['ok'])
    return t
a, b = load(sys.argv[1]), load(sys.argv[2])
print('%-18s %5s %9s %9s %9s %9s %7s %7s %7s' % ('shape', 'M', 'cublas0', 'int4', 'cublas1', 'dense', 'int4x', 'densex', 'd/i'))
for k in sorted(a):
    if k not in b: continue
    c0, i4 = a[k].get('cublas_f16', (0,))[0], a[k].get('cuda_hybrid', (0,))[0]
    c1, de = b[k].get('cublas_f16', (0,))[0], b[k].get('cuda_hybrid', (0,))[0]
    ok = a[k].get('cuda_hybrid', (0, '?'))[1] + b[k].get('cuda_hybrid', (0, '?'))[1]
    if i4 and de: print('%-18s %5d %9.1f %9.1f %9.1f %9.1f %7.2f %7.2f %7.2f ok=%s' % (k[0], k[1], c0, i4, c1, de, c0 / i4, c1 / de, de / i4, ok))
PY
echo "total $(($(date +%s)-T0)) s"
