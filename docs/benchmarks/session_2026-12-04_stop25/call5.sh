#!/usr/bin/env bash
# Session 2026-12-04 call 5: the 192-token tile's entries at M = 257..768 (call 4's tune) against main fbf92f8:
# prefill_dq_ab old / new, 3 interleaved rounds; then the registry's prefill rows at those M, every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins5.tar.xz -C $W
SH=llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.down:4096:14336,8192x8192:8192:8192,llama8b.gate_up:28672:4096,llama70b.gate_up:57344:8192
MS=256,288,320,384,512,520,576,640,768
mkdir -p $W/ab5
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    timeout 100 $W/c5/$b/prefill_dq_ab bench $W/ab5/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab5/log_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab5 > $OUT/call5_table_ab.txt 2>&1
cat $OUT/call5_table_ab.txt
tar -czf $OUT/call5_ab.tar.gz -C $W ab5
timeout 120 $W/c5/new/w4a16_bench_gpu --registry cuda_prefill --no-extra-groups --shapes llama8b.qkv,llama8b.o,llama8b.down,8192x8192 \
  --ms 160,320,576,768 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/call5_registry_check.csv > $OUT/call5_registry_check.log 2>&1
echo "registry rc=$? t=$(($(date +%s)-T0))"
python3 - $OUT/call5_registry_check.csv <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['kernel'] != 'cublas_f16' and not r['kernel'].startswith('cublas')]
bad = [r for r in rows if r['ok'] != '1']
print('int4 rows', len(rows), 'failed', len(bad), 'max rel_err f16 %.2e bf16 %.2e' % (
    max(float(r['rel_err']) for r in rows if r['dtype'] == 'float16'), max(float(r['rel_err']) for r in rows if r['dtype'] == 'bfloat16')))
for r in bad: print('FAILED', r['shape'], r['m'], r['dtype'], r['format'], r['rel_err'])
PY
echo "total $(($(date +%s)-T0)) s"
