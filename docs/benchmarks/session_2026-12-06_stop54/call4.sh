#!/usr/bin/env bash
# Stop 54 call 4 (carry .carry-s54b: prepare.sh .carry-s54b): is the prefill-vs-cuBLAS spread drift? Call 3 put the same
# kernels 10% apart from process to process (llama8b.gate_up M = 1024: ours 348-366 us, cuBLAS 315-354), and stop 47's
# H200 data has the plan's one kernel at 319 and 351 us in two rows of one process. Here prefill_bench tune_tma with
# W4A16_PREFILL_INTERLEAVE=21 (cuBLAS fp16 and the default plan replayed alternately, 10 warm-up rounds, rows *_il) beside
# the usual sequential rows, 3 processes, fp16 uint4b8 g = 128, the four >= 8 MB Llama-3-8B layers + 8192x8192 at
# M = 1024 / 4096; nvidia-smi logs SM clock, power, temperature and throttle reasons every 100 ms meanwhile.
. scripts/lib/device-env.sh
S=/tmp/s54c4; rm -rf $S /tmp/s54bb; mkdir -p $S /tmp/s54bb && tar -xJf ${CARRY:-.carry-s54b}/b.tar.xz -C /tmp/s54bb
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 > $S/clocks.csv 2>&1 &
LOG=$!
nvidia-smi --query-gpu=timestamp,clocks_event_reasons.active --format=csv -lms 100 > $S/reasons.csv 2>&1 &
LOG2=$!
# SHAPES, MS, CONFIGS, PROCS, IL: call 6 reuses this script with other tiles (the defaults: call 4).
for r in $(seq 1 ${PROCS:-3}); do
  echo "round $r start $(date +%T.%N)" >> $S/marks.txt
  W4A16_PREFILL_TUNE_SHAPES=${SHAPES:-llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down,8192x8192} W4A16_PREFILL_TUNE_MS=${MS:-1024,4096} \
  W4A16_PREFILL_TUNE_CONFIGS=${CONFIGS:-20} W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=${IL:-21} \
    timeout 150 /tmp/s54bb/prefill_bench $S/il_r$r.csv tune_tma > $S/il_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r end $(date +%T.%N) (${SECONDS}s)" | tee -a $S/marks.txt
done
kill $LOG $LOG2
python3 - $S <<'PY' | tee $OUT/summary.txt
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'il_r*.csv'))):
    for r in csv.DictReader(open(p)):
        t[(r['shape'], int(r['M']), r['kernel'])].append(float(r['us']))
keys = sorted({(k[0], k[1]) for k in t})
print('%-16s %-5s %-28s %-28s %-28s %-28s' % ('shape', 'M', 'cublas_f16 (seq)', 'cuda_prefill (seq)', 'cublas_f16_il', 'cuda_prefill_il'))
for sh, m in keys:
    row = []
    for k in ('cublas_f16', 'cuda_prefill', 'cublas_f16_il', 'cuda_prefill_il'):
        v = t.get((sh, m, k), [])
        row.append('%.1f [%s]' % (statistics.median(v), ' '.join('%.0f' % x for x in v)) if v else '-')
    seq = [c / o for c, o in zip(t.get((sh, m, 'cublas_f16'), []), t.get((sh, m, 'cuda_prefill'), []))]
    il = [c / o for c, o in zip(t.get((sh, m, 'cublas_f16_il'), []), t.get((sh, m, 'cuda_prefill_il'), []))]
    print('%-16s %-5d %-28s %-28s %-28s %-28s  ratio seq %s | il %s' % (sh, m, *row, ' '.join('%.3f' % x for x in seq), ' '.join('%.3f' % x for x in il)))
PY
python3 - $S <<'PY' | tee $OUT/summary_il.txt
# Every interleaved row (*_il) per process, as a ratio to the same process's cublas_f16_il (> 1: faster than cuBLAS).
import csv, glob, os, sys, collections, statistics
t = collections.defaultdict(list)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'il_r*.csv'))):
    cb = {}
    rows = list(csv.DictReader(open(p)))
    for r in rows:
        if r['kernel'] == 'cublas_f16_il': cb[(r['shape'], r['M'])] = float(r['us'])
    for r in rows:
        if ('_il' in r['kernel']) and (r['shape'], r['M']) in cb:
            t[(r['shape'], int(r['M']), r['kernel'])].append((float(r['us']), cb[(r['shape'], r['M'])] / float(r['us'])))
for k in sorted(t, key=lambda k: (k[0], k[1], -statistics.median(x[1] for x in t[k]))):
    v = t[k]
    print('%-16s M=%-5d %-52s median %.1f us, x cuBLAS %s' % (k[0], k[1], k[2][:52], statistics.median(x[0] for x in v), ' '.join('%.3f' % x[1] for x in v)))
PY
python3 - $S/clocks.csv $S/reasons.csv <<'PY' | tee -a $OUT/summary.txt
import csv, sys, statistics
rows = list(csv.reader(open(sys.argv[1])))[1:]
def num(s):
    try: return float(s.strip().split()[0])
    except Exception: return None
ok = [r for r in rows if len(r) >= 5 and num(r[1]) and num(r[3])]
sm, pw = [num(r[1]) for r in ok], [num(r[3]) for r in ok]
if ok:
    print('samples %d; SM clock min/median/max %s/%s/%s MHz; power max %s W' % (len(sm), min(sm), statistics.median(sm), max(sm), max(pw)))
    busy = [num(r[1]) for r in ok if num(r[3]) > 300]
    if busy:
        print('under load (> 300 W, %d samples): SM clock min/median/max %s/%s/%s' % (len(busy), min(busy), statistics.median(busy), max(busy)))
else:
    print('no clock samples: ' + ' '.join(open(sys.argv[1]).read().split()[:30]))
reasons = [r[1].strip() for r in list(csv.reader(open(sys.argv[2])))[1:] if len(r) > 1]
print('throttle reasons seen: %s' % sorted(set(reasons))[:8])
PY
tar -czf $OUT/data.tar.gz -C $S .
