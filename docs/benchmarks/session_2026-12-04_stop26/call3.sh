#!/usr/bin/env bash
# Session 2026-12-04 stop 26, call 3: the overlapped token split (prefill_kernel.cuh DeferredPdl: the second call's
# kernel waits for the first at its end). Every prefill GPU test; prefill_dq_ab splits (default plan, forced token
# splits sequential / overlapped at heads of whole 256-token blocks) on shapes whose one-call plan ends in a part
# wave, 2 rounds; the kernel change against the binary of call 2 (old) on the default plans at PERF.md token counts.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s26; mkdir -p $W
tar -xJf .carry-s26/bins3.tar.xz -C $W
timeout 170 $W/new/prefill_gpu_test --gtest_brief=1 > $OUT/call3_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|token split" $OUT/call3_prefill_gpu_test.log | head
gzip -9 $OUT/call3_prefill_gpu_test.log
mkdir -p $W/sp3
for r in 1 2; do
  timeout 120 $W/new/prefill_dq_ab splits $W/sp3/splits_a_$r.csv llama8b.qkv:6144:4096 768,1024,1536,2048 > $W/sp3/log_a_$r.log 2>&1; echo "splits a $r rc=$? t=$(($(date +%s)-T0))"
  timeout 120 $W/new/prefill_dq_ab splits $W/sp3/splits_b_$r.csv q7b.qkv:4608:3584,q14b.o:5120:5120 1024,2048 > $W/sp3/log_b_$r.log 2>&1; echo "splits b $r rc=$? t=$(($(date +%s)-T0))"
  timeout 120 $W/new/prefill_dq_ab splits $W/sp3/splits_c_$r.csv 8192x8192:8192:8192,llama8b.gate_up:28672:4096 1024 > $W/sp3/log_c_$r.log 2>&1; echo "splits c $r rc=$? t=$(($(date +%s)-T0))"
done
python3 - $W/sp3 <<'PY' | tee $OUT/call3_splits_table.txt
import csv, glob, os, statistics, sys
d = sys.argv[1]
rows = {}
hashes = {}
for p in sorted(glob.glob(os.path.join(d, 'splits_*.csv'))):
    for r in csv.DictReader(open(p)):
        key = (r['shape'], int(r['m']), r['kernel'])
        rows.setdefault(key, []).append(float(r['us']))
        hashes.setdefault(key, set()).add(r['y_hash'])
        rows.setdefault(('plan',) + key, r['plan'])
pts = sorted({(k[0], k[1]) for k in rows if k[0] != 'plan'})
for sh, m in pts:
    cub = rows.get((sh, m, 'cublas_f16'))
    dflt = rows.get((sh, m, 'cuda_prefill'))
    if not dflt: continue
    d0 = statistics.median(dflt)
    print('%s M=%d default %.1f us (cuBLAS %.1f) %s' % (sh, m, d0, statistics.median(cub) if cub else 0, rows[('plan', sh, m, 'cuda_prefill')]))
    for k in sorted(k for k in rows if k[0] == sh and k[1] == m and k[2].startswith(('seq:', 'ovl:'))):
        t = statistics.median(rows[k])
        same = ''
        if k[2].startswith('ovl:'):
            twin = (sh, m, 'seq:' + k[2][4:])
            same = ' bits=seq' if hashes.get(twin) == hashes[k] and len(hashes[k]) == 1 else ' BITS DIFFER'
        print('   %-9s %8.1f us  %.3fx default%s  %s' % (k[2], t, t / d0, same, rows[('plan',) + k][:150]))
PY
SH=llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.down:4096:14336,8192x8192:8192:8192,qwen0.5b.gate_up:9728:896,qwen0.5b.qkv:1152:896
MS=64,128,256,1024,4096
mkdir -p $W/ab3
r=0
for pair in "old new" "new old"; do
  r=$((r+1))
  for b in $pair; do
    timeout 100 $W/$b/prefill_dq_ab bench $W/ab3/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab3/log_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab3 > $OUT/call3_table_ab.txt 2>&1
tail -4 $OUT/call3_table_ab.txt
tar -czf $OUT/call3_runs.tar.gz -C $W sp3 ab3
echo "total $(($(date +%s)-T0)) s"
