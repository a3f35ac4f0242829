#!/usr/bin/env bash
# Session 2026-12-04 stop 26, call 6: token split v3 (a part the measured table plans counts the smaller of its plan's estimate and the
# model's own pick's) against v2 (main before). Plans of both on 14 shapes x 17 token counts; prefill_dq_ab
# bench of v2 (old) against v3
# (new) at the points where they differ, 3 interleaved rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s26; mkdir -p $W
tar -xJf .carry-s26/bins6.tar.xz -C $W
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,llama70b.gate_up:57344:8192,q14b.o:5120:5120,q7b.qkv:4608:3584,q7b.gate_up:37888:3584,q7b.down:3584:18944
MS=260,280,300,320,350,384,400,450,520,600,700,800,1030,1100,1300,2100,4100
$W/v2/prefill_dq_ab plans $SH $MS > $W/plans_old.txt 2> $W/plans_old.log
$W/v3/prefill_dq_ab plans $SH $MS > $W/plans_new.txt 2> $W/plans_new.log
python3 - $W <<'PY'
import sys, os
w = sys.argv[1]
def read(p):
    d = {}
    for line in open(p):
        sh, rest = line.split(' ', 1)
        m = rest.split()[0].split('=')[1]
        d[(sh, m)] = rest.split(' ', 1)[1].strip()
    return d
a, b = read(os.path.join(w, 'plans_old.log')), read(os.path.join(w, 'plans_new.log'))
diff = {}
for k in b:
    if a.get(k) != b[k]: diff.setdefault(k[0], []).append(k[1])
with open(os.path.join(w, 'plans_diff.txt'), 'w') as f:
    for sh, ms in diff.items(): f.write('%s %s\n' % (sh, ','.join(ms)))
print(open(os.path.join(w, 'plans_diff.txt')).read())
PY
mkdir -p $W/ab6
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    [ $b = old ] && B=$W/v2/prefill_dq_ab || B=$W/v3/prefill_dq_ab
    i=0
    while read -r sh ms; do
      i=$((i+1))
      timeout 60 $B bench $W/ab6/part${i}_${b}_$r.csv $sh $ms uint4b8 > $W/ab6/log_${b}_${r}_$i.log 2>&1 || echo "FAIL $sh $b $r"
    done < $W/plans_diff.txt
    python3 - $W/ab6 $b $r <<'PY'
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
python3 scripts/prefill-ab/ab_table.py $W/ab6 > $OUT/call6_table_v2.txt 2>&1
cat $OUT/call6_table_v2.txt
tar -czf $OUT/call6_ab.tar.gz -C $W ab6 plans_old.log plans_new.log plans_diff.txt
echo "total $(($(date +%s)-T0)) s"
