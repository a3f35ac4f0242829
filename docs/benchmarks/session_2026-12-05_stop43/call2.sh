#!/usr/bin/env bash
# Stop 43, call 2 (stop 42's): the merged build (.carry-s43/c2.tar.xz: w4a16_bench_gpu, w4a16_test_gpu_decode) with the integer math's
# defaults set from call 1. Its decode GPU tests, then the decode sweep of the 10 PERF.md shapes at M = 1, 2, 3, 4, 6, 8,
# fp16 / bf16 uint4b8 g = 128, cuBLAS fp16 / bf16 in the same process (docs/BENCHMARKS.md's top table), and
# W4A16_DECODE_IMMA=0 of the same binary beside it (2 rounds each, interleaved). The rows set the knob either way, so
# call 1's binaries serve as well: C=c1 SKIP_TESTS=1 (carry c1.tar.xz) right after call 1, on the same warm machine;
# IMMA (default 1) is the knob of the sweep's rows (3: the streaming kernel's integer math too).
T0=$(date +%s)
. scripts/lib/device-env.sh
# Every file into one archive (the device tool brings back at most 8 files from $OUT), also when the call is cut short.
R=$OUT; OUT=/tmp/s43c2_out; mkdir -p $OUT; trap 'tar -czf $R/call2.tar.gz -C $OUT .' EXIT
C=${C:-c2}
W=/tmp/s43c2; mkdir -p $W $OUT && tar -xJf .carry-s43/$C.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
if [ -z "$SKIP_TESTS" ]; then
  timeout 200 $W/$C/w4a16_test_gpu_decode --gtest_brief=1 > $OUT/test_decode.log 2>&1
  echo "decode tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $OUT/test_decode.log | head -12
fi
SH=qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up
for r in 1 2; do
  W4A16_DECODE_IMMA=${IMMA:-1} timeout 200 $W/$C/w4a16_bench_gpu --shapes $SH --ms 1,2,3,4,6,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --decode-max-m 8 \
    --csv $OUT/sweep_$r.csv > $OUT/sweep_$r.log 2>&1 || echo "sweep $r rc=$?"
  W4A16_DECODE_IMMA=0 timeout 150 $W/$C/w4a16_bench_gpu --shapes $SH --ms 1,2,3,4,6,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups \
    --no-cublas --decode-max-m 8 --csv $OUT/off_$r.csv > $OUT/off_$r.log 2>&1 || echo "off $r rc=$?"
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $OUT/off_1.csv,$OUT/off_2.csv $OUT/sweep_1.csv,$OUT/sweep_2.csv > $OUT/ab.md 2>&1
echo "== IMMA off -> default: $(grep -E 'rows;' $OUT/ab.md); rows not ok: $(grep -c '| NO |' $OUT/ab.md)"
python3 - "$OUT" <<'PY'
import csv, sys
out = sys.argv[1]
rows = [r for i in (1, 2) for r in csv.DictReader(open(f'{out}/sweep_{i}.csv'))]
best = {}
for r in rows:
    key = (r['kernel'], r['shape'], r['dtype'], int(r['m']))
    if key not in best or float(r['us']) < float(best[key]['us']): best[key] = r
bad = [r for r in rows if r['ok'] != '1']
print('rows', len(rows), 'not ok', len(bad))
for (k, s, d, m), r in sorted(best.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][3])):
    if k != 'cuda_decode': continue
    c = best.get(('cublas_f16' if d == 'float16' else 'cublas_bf16', s, d, m))
    print(f"{s:17s} {d:8s} M={m:2d} {float(r['us']):7.2f} us {float(r['pct_of_4.4TBps']):5.1f}%  cublas {float(c['us']) if c else 0:7.2f}  {r['plan'][:60]}")
PY
echo "done t=$(($(date +%s)-T0))"
