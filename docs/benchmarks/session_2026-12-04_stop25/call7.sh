#!/usr/bin/env bash
# Session 2026-12-04 call 7: call 6's candidate entries (Qwen shapes M = 129..768, bm192 at M = 1025..1344) against
# main 895b39b: prefill_dq_ab old / new, 3 interleaved rounds; the registry's prefill rows at the new points (f64 check).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins7.tar.xz -C $W
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.down:896:4864,qwen0.5b.gate_up:9728:896,8192x8192:8192:8192,llama8b.down:4096:14336,llama8b.gate_up:28672:4096
MS=160,320,384,576,768,1100,1152,1344
mkdir -p $OUT/ab7
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    timeout 45 $W/c7/$b/prefill_dq_ab bench $OUT/ab7/bench_${b}_$r.csv $SH $MS uint4b8 > $OUT/ab7/log_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $OUT/ab7 > $OUT/call7_table_ab.txt 2>&1
cat $OUT/call7_table_ab.txt

timeout 60 $W/c7/new/w4a16_bench_gpu --registry cuda_prefill --no-extra-groups --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.down,qwen0.5b.gate_up,8192x8192 \
  --ms 160,384,576,768,1152 --dtypes f16,bf16 --scalars uint4b8 --csv $OUT/call7_registry_check.csv > $OUT/call7_registry_check.log 2>&1
echo "registry rc=$? t=$(($(date +%s)-T0))"
python3 - $OUT/call7_registry_check.csv <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if not r['kernel'].startswith('cublas')]
bad = [r for r in rows if r['ok'] != '1']
print('int4 rows', len(rows), 'failed', len(bad))
for r in bad: print('FAILED', r['shape'], r['m'], r['dtype'], r['format'], r['rel_err'])
PY
echo "total $(($(date +%s)-T0)) s"
