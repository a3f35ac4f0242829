#!/usr/bin/env bash
# Part D of call1.sh: stop 49's row-split entries (llama8b.qkv M = 900 / 1000 / 1024, Qwen2.5-7B qkv 960 / 1000 / 1024) with
# W4A16_PREFILL_ROW_SPLIT=0 / 1 on main's build, then the candidates' token sweep: the default (switch 0) against the bm256
# head over its full waves + the bm256 s2 tail, cuBLAS fp16 in the same process, 2 rounds. B = the extracted .carry-s51m.
B=${B:-/tmp/s51m}
for r in 1 2; do for rs in 0 1; do
  W4A16_PREFILL_ROW_SPLIT=$rs W4A16_PREFILL_TUNE_MS=900,1000,1024 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,q7b.qkv:4608:3584 timeout 60 $B/prefill_bench $OUT/e_rs${rs}_r$r.csv tune_tma > $OUT/e.log 2>&1 \
    || tail -3 $OUT/e.log
done; done
for r in 1 2; do
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=896,960,1024,1088,1152,1280 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_ROWSPLIT_HEAD=20 W4A16_PREFILL_ROWSPLIT_TAILS=20:2 W4A16_PREFILL_TUNE_SHAPES=l70b.qkv:10240:8192 \
    timeout 90 $B/prefill_bench $OUT/c_l70_r$r.csv tune_tma > $OUT/c.log 2>&1 || tail -3 $OUT/c.log
  W4A16_PREFILL_ROW_SPLIT=0 W4A16_PREFILL_TUNE_MS=1280,1408,1536,1664,1792 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_ROWSPLIT_HEAD=20 W4A16_PREFILL_ROWSPLIT_TAILS=20:2 W4A16_PREFILL_TUNE_SHAPES=q7b.o:3584:3584 \
    timeout 90 $B/prefill_bench $OUT/c_q7o_r$r.csv tune_tma > $OUT/c.log 2>&1 || tail -3 $OUT/c.log
done
python3 - $OUT <<'PY'
import csv, glob, os, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    tag = os.path.basename(p).split('_r')[0]
    for r in csv.DictReader(open(p)):
        t[(r['shape'], int(r['M']))][tag + ':' + r['kernel'][:28]].append(float(r['us']))
for k in sorted(t):
    print(k[0], k[1], ' | '.join('%s %s' % (n, '/'.join('%.1f' % x for x in v)) for n, v in sorted(t[k].items())))
PY
