#!/usr/bin/env bash
# Session 2026-12-04 stop 26, call 1: the token split (prefill_token_split). Every prefill GPU test (the new
# TokenSplitMatchesReferenceOnBothParts, and stop 25's unrun W4A16_PREFILL_TAIL_BOX rejection) and the registry GPU
# tests; then, in one binary, W4A16_PREFILL_TOKEN_SPLIT=0 (old) against the default (new) on the points this
# device splits, prefill_dq_ab bench, 3 interleaved rounds, cuBLAS fp16 in the same processes.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s26; mkdir -p $W
tar -xJf .carry-s26/bins1.tar.xz -C $W
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 170 $W/new/$t --gtest_brief=1 > $OUT/call1_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|token split" $OUT/call1_$t.log | head
done
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,llama70b.gate_up:57344:8192,q14b.o:5120:5120,q7b.qkv:4608:3584,q7b.gate_up:37888:3584,q7b.down:3584:18944
MS=130,200,260,300,400,520,600,700,800,1030,1100,1300,1600,2050,2100,2500,3000,4100
$W/new/prefill_dq_ab plans $SH $MS > $W/plans.txt 2> $OUT/call1_plans.log
cat $W/plans.txt
mkdir -p $W/ab1
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    [ $b = old ] && export W4A16_PREFILL_TOKEN_SPLIT=0 || unset W4A16_PREFILL_TOKEN_SPLIT
    i=0
    while read -r sh ms; do
      i=$((i+1))
      timeout 60 $W/new/prefill_dq_ab bench $W/ab1/part${i}_${b}_$r.csv $sh $ms uint4b8 > $W/ab1/log_${b}_${r}_$i.log 2>&1 || echo "FAIL $sh $b $r"
    done < $W/plans.txt
    python3 - $W/ab1 $b $r <<'PY'
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
python3 scripts/prefill-ab/ab_table.py $W/ab1 > $OUT/call1_table_ab.txt 2>&1
cat $OUT/call1_table_ab.txt
tar -czf $OUT/call1_ab.tar.gz -C $W ab1 plans.txt
gzip -9 $OUT/call1_prefill_gpu_test.log
echo "total $(($(date +%s)-T0)) s"
