#!/usr/bin/env bash
# Stop 54 call 2 (an H200; carry .carry-s52c4 = stop 52's final w4a16_bench_gpu, whose kernels and plans equal HEAD's):
# ROUNDS (6), PART_B=0, PART_C=0: fewer rounds of A, no B / C (an H100: call 3).
#  A. issue 5's one M >= 1024 miss on the H200 (llama8b.gate_up M = 1024, 0.93x cuBLAS in stop 51's single round) in
#     6 whole-process rounds: the hybrid (registry cuda_hybrid = the prefill path there) against cuBLAS in the same
#     process, fp16 and bf16 uint4b8 g = 128, M = 1024 / 2048;
#  B. one round of the six large layers at M = 1024, fp16 / bf16 (the row's other shapes, bf16 not measured since stop 45);
#  C. stop 52's call7.sh: the uint4 hybrid on the six large layers, M = 1..32 (never run on an H200);
#  D. (carry .carry-s54 too: prepare.sh) stop 53 call 7's row-split tails again, now in the head's k-loop order (config
#     12's early-issue twin, as the library runs a measured row split; stop 53 call 7 timed config 12 itself): llama8b.gate_up
#     M = 1024, tails split 2 / 3 / 4 / 5 / 8, 2 rounds, cuBLAS fp16 and the plan in the same process.
. scripts/lib/device-env.sh
S=/tmp/s54c2; rm -rf $S; mkdir -p $S /tmp/s52c4b && tar -xJf .carry-s52c4/b.tar.xz -C /tmp/s52c4b; B=/tmp/s52c4b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for r in $(seq 1 ${ROUNDS:-6}); do
  timeout 60 $B/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 1024,2048 --shapes llama8b.gate_up \
    --dtypes f16,bf16 --scalars uint4b8 --csv $S/gu_r$r.csv > /dev/null 2> $S/gu_r$r.err || echo "rc=$? gu $r" | tee -a $OUT/gpu.txt
done
echo "A done (${SECONDS}s)" | tee -a $OUT/gpu.txt
if [ "${PART_B:-1}" = 1 ]; then
  timeout 150 $B/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --ms 1024 \
    --shapes 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up --dtypes f16,bf16 --scalars uint4b8 \
    --csv $S/large.csv > /dev/null 2> $S/large.err || echo "rc=$? large" | tee -a $OUT/gpu.txt
fi
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt
python3 - $S <<'PY' | tee $OUT/summary.txt
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    for r in csv.DictReader(open(p)):
        t[(os.path.basename(p)[:2], r['shape'], int(r['m']), r['dtype'], r['kernel'].split()[0])].append(float(r['us']))
for k in sorted(t):
    if k[4].startswith('cublas'): continue
    peer = [v for kk, v in t.items() if kk[:4] == k[:4] and kk[4].startswith('cublas')]
    if not peer: continue
    ours, cb = statistics.median(t[k]), statistics.median(peer[0])
    rat = ' / '.join('%.3f' % (c / o) for o, c in zip(t[k], peer[0]))
    print('%s %-16s M=%-5d %-8s %-12s median %.1f us, cuBLAS %.1f: %.3fx   rounds %s' % (k[0], k[1], k[2], k[3], k[4], ours, cb, cb / ours, rat))
PY
tar -czf $OUT/data.tar.gz -C $S .
S=/tmp/s54c2d; rm -rf $S; mkdir -p $S /tmp/s54b && tar -xJf .carry-s54/b.tar.xz -C /tmp/s54b
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_ROWSPLIT_TAILS=12:2,12:3,12:4,12:5,12:8 timeout 90 /tmp/s54b/prefill_bench $S/tails_r$r.csv tune_tma > $S/tails_r$r.log 2>&1 \
    || echo "rc=$? tails $r" | tee -a $OUT/gpu.txt
done
python3 - $S <<'PY2' | tee $OUT/summary_d.txt
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'tails_r*.csv'))):
    for r in csv.DictReader(open(p)):
        t[(r['shape'], int(r['M']), r['kernel'][:60], r['plan'][-70:])].append(float(r['us']))
for k, v in sorted(t.items(), key=lambda kv: statistics.median(kv[1])):
    print('%-16s M=%-5d %-60s median %.1f  %s  | %s' % (k[0], k[1], k[2], statistics.median(v), ' / '.join('%.1f' % x for x in v), k[3]))
PY2
tar -czf $OUT/data_d.tar.gz -C $S .
if [ "${PART_C:-1}" = 1 ]; then mkdir -p $OUT/c; OUT=$OUT/c bash docs/benchmarks/session_2026-12-06_stop52/call7.sh; fi
