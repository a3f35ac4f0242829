#!/usr/bin/env bash
# Session 2026-12-04 stop 26, call 2: the token split's GPU test (K fixed to whole groups); the points a margin of
# 0.97 (build m97) would split beyond those of 0.9 (new), timed against no split (new with
# W4A16_PREFILL_TOKEN_SPLIT=0), 3 interleaved rounds; the registry's hybrid rows at split points, fp16 / bf16 x
# uint4b8 / uint4, every row against f64, cuBLAS in the same process.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s26; mkdir -p $W
tar -xJf .carry-s26/bins2.tar.xz -C $W
timeout 120 $W/new/prefill_gpu_test --gtest_filter='*TokenSplit*:*Rejects*' > $OUT/call2_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|token split" $OUT/call2_prefill_gpu_test.log | head
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,llama70b.gate_up:57344:8192,q14b.o:5120:5120,q7b.qkv:4608:3584,q7b.gate_up:37888:3584,q7b.down:3584:18944
MS=130,200,260,300,400,520,600,700,800,1030,1100,1300,1600,2050,2100,2500,3000,4100
$W/new/prefill_dq_ab plans $SH $MS > $W/plans_new.txt 2> $W/plans_new.log
$W/m97/prefill_dq_ab plans $SH $MS > $W/plans_m97.txt 2> $W/plans_m97.log
python3 - $W <<'PY'
import sys, os
w = sys.argv[1]
def read(p):
    d = {}
    for line in open(p):
        sh, ms = line.split()
        d[sh] = set(ms.split(','))
    return d
a, b = read(os.path.join(w, 'plans_new.txt')), read(os.path.join(w, 'plans_m97.txt'))
with open(os.path.join(w, 'plans_extra.txt'), 'w') as f:
    for sh in b:
        extra = sorted(b[sh] - a.get(sh, set()), key=int)
        if extra: f.write('%s %s\n' % (sh, ','.join(extra)))
print(open(os.path.join(w, 'plans_extra.txt')).read())
PY
mkdir -p $W/ab2
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    if [ $b = old ]; then B=$W/new/prefill_dq_ab; export W4A16_PREFILL_TOKEN_SPLIT=0; else B=$W/m97/prefill_dq_ab; unset W4A16_PREFILL_TOKEN_SPLIT; fi
    i=0
    while read -r sh ms; do
      i=$((i+1))
      timeout 60 $B bench $W/ab2/part${i}_${b}_$r.csv $sh $ms uint4b8 > $W/ab2/log_${b}_${r}_$i.log 2>&1 || echo "FAIL $sh $b $r"
    done < $W/plans_extra.txt
    python3 - $W/ab2 $b $r <<'PY'
import glob, sys, os
d, b, r = sys.argv[1:]
parts = sorted(glob.glob(os.path.join(d, 'part*_%s_%s.csv' % (b, r))))
with open(os.path.join(d, 'bench_%s_%s.csv' % (b, r)), 'w') as f:
    for i, p in enumerate(parts):
        lines = open(p).read().splitlines()
        f.write('\n'.join(lines if i == 0 else lines[1:]) + '\n')
        os.remove(p)
PY
    echo "ab $b $r t=$(($(date +%s)-T0))"
  done
done
unset W4A16_PREFILL_TOKEN_SPLIT
python3 scripts/prefill-ab/ab_table.py $W/ab2 > $OUT/call2_table_m97.txt 2>&1
cat $OUT/call2_table_m97.txt
timeout 150 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --shapes llama8b.o,llama8b.down,llama8b.qkv,8192x8192 \
  --ms 260,600,1030,2050 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/call2_registry_check.csv > $W/registry.log 2>&1
echo "registry rc=$? t=$(($(date +%s)-T0))"
python3 - $OUT/call2_registry_check.csv <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if not r['kernel'].startswith('cublas')]
bad = [r for r in rows if r['ok'] != '1']
print('int4 rows', len(rows), 'failed', len(bad), 'max rel_err f16 %.2e bf16 %.2e' % (
    max(float(r['rel_err']) for r in rows if r['dtype'] == 'float16'), max(float(r['rel_err']) for r in rows if r['dtype'] == 'bfloat16')))
for r in bad: print('FAILED', r['shape'], r['m'], r['dtype'], r['format'], r['rel_err'])
PY
tar -czf $OUT/call2_ab.tar.gz -C $W ab2 plans_new.txt plans_new.log plans_m97.txt plans_m97.log plans_extra.txt registry.log
echo "total $(($(date +%s)-T0)) s"
