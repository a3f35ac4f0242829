#!/usr/bin/env bash
# Session 2026-12-04 stop 26, call 5 (main with the token split, candidates at every M): every prefill GPU test and
# the registry GPU tests; the registry's hybrid rows at points the split now takes (fp16 / bf16 x uint4b8 / uint4,
# every row against f64); the fp16 uint4b8 hybrid at token counts past multiples of 256 on the ten PERF.md shapes,
# cuBLAS fp16 in the same process.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s26; mkdir -p $W
tar -xJf .carry-s26/bins5.tar.xz -C $W
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 170 $W/new/$t --gtest_brief=1 > $OUT/call5_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|token split" $OUT/call5_$t.log | head
done
gzip -9 $OUT/call5_prefill_gpu_test.log
check() {
python3 - "$1" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if not r['kernel'].startswith('cublas')]
bad = [r for r in rows if r['ok'] != '1']
print('int4 rows', len(rows), 'failed', len(bad), 'max rel_err f16 %.2e bf16 %.2e' % (
    max([float(r['rel_err']) for r in rows if r['dtype'] == 'float16'] or [0]), max([float(r['rel_err']) for r in rows if r['dtype'] == 'bfloat16'] or [0])))
for r in bad: print('FAILED', r['shape'], r['m'], r['dtype'], r['format'], r['rel_err'])
PY
}
timeout 150 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --shapes llama8b.o,llama8b.down,llama8b.qkv,8192x8192 \
  --ms 768,800,1280,1536,3072 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-cublas --csv $OUT/call5_registry_check.csv > /dev/null 2>&1
echo "registry check rc=$? t=$(($(date +%s)-T0))"; check $OUT/call5_registry_check.csv
timeout 170 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 --ms 300,520,1030,2050,4100 \
  --dtypes f16 --scalars uint4b8 --csv $OUT/call5_hybrid_oddm.csv > /dev/null 2>&1
echo "odd-M sweep rc=$? t=$(($(date +%s)-T0))"; check $OUT/call5_hybrid_oddm.csv
python3 - $OUT/call5_hybrid_oddm.csv <<'PY'
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r['shape'], int(r['m']))][r['kernel']] = float(r['us'])
print('| shape | ' + ' | '.join('M=%d' % m for m in (300, 520, 1030, 2050, 4100)) + ' |')
for sh in sorted({k[0] for k in t}):
    cells = []
    for m in (300, 520, 1030, 2050, 4100):
        d = t.get((sh, m), {})
        ours = d.get('cuda_hybrid'); cub = next((v for k, v in d.items() if k.startswith('cublas')), None)
        cells.append('%.1f (%.2fx)' % (ours, cub / ours) if ours and cub else '-')
    print('| %s | %s |' % (sh, ' | '.join(cells)))
PY
gzip -9 $OUT/call5_registry_check.csv $OUT/call5_hybrid_oddm.csv
echo "total $(($(date +%s)-T0)) s"
