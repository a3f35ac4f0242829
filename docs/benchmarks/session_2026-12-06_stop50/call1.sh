#!/usr/bin/env bash
# Stop 50 call 1, three parts in one call (the machine goes back 30 s after a call):
#  A. decode-sized wgmma tiles (branch decode-wgmma: configs 35..43 of the prefill kernel with 16 / 32 tokens per tile,
#     wgmma m64n16k16 / m64n32k16, 2..4 CTAs per SM): their GPU tests (every config x split, TMA tails / strides /
#     act-order, ONE_GROUP against per-half bitwise, cluster reduce), then tune_tma at M = 8 / 16 / 32 on the big PERF.md
#     layers against the bm64 occ2 tile (config 23, the plan's tile there), and the decode kernel at M = 8 / 16 / 32 of
#     the same build (w4a16_bench_gpu, cuBLAS fp16 in both processes). Carry .carry-s50dw (prepare.sh).
#  B. stop 49's call3.sh (main's row split entries on this device: tests, the default with the switch 0 / 1).
#  C. stop 49's call4.sh (row-split candidates on the other part-wave points).
# Every part writes under $S; one archive and the summaries come back (the file count of $OUT is small).
. scripts/lib/device-env.sh
S=/tmp/s50c1; rm -rf $S; mkdir -p $S/a $S/b $S/c /tmp/s50dw && tar -xJf .carry-s50dw/b.tar.xz -C /tmp/s50dw
B=/tmp/s50dw
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 120 $B/prefill_gpu_test --gtest_filter='PrefillGpu.EveryKernelConfigAndSplit:PrefillGpu.TmaConfigsOnTails*:PrefillGpu.OneGroup*:PrefillGpu.ClusterSplit*' \
  > $S/a/gtest.log 2>&1; echo "A gtest rc=$?" | tee -a $OUT/gpu.txt
grep -E "^\[  (FAILED|PASSED|  OK) |^\[==========\]" $S/a/gtest.log | tee -a $OUT/gpu.txt
grep -B2 -A6 "Failure" $S/a/gtest.log | head -30 | tee -a $OUT/gpu.txt
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama70b.gate_up,llama8b.o
W4A16_PREFILL_TUNE_MS=16 W4A16_PREFILL_TUNE_SPLITS=1,2,4,8 W4A16_PREFILL_TUNE_CONFIGS=23,35,36,37,38,39,40,41,42 W4A16_PREFILL_TUNE_SHAPES=$SH \
  timeout 150 $B/prefill_bench $S/a/t16.csv tune_tma > $S/a/t16.log 2>&1 || { echo "rc=$? t16"; tail -3 $S/a/t16.log; }
W4A16_PREFILL_TUNE_MS=8,32 W4A16_PREFILL_TUNE_SPLITS=1,2,4,8 W4A16_PREFILL_TUNE_CONFIGS=23,35,37,38,43 W4A16_PREFILL_TUNE_SHAPES=$SH \
  timeout 120 $B/prefill_bench $S/a/t832.csv tune_tma > $S/a/t832.log 2>&1 || { echo "rc=$? t832"; tail -3 $S/a/t832.log; }
timeout 90 $B/w4a16_bench_gpu --shapes $SH --ms 8,16,32 --dtypes f16 --scalars uint4b8 --no-extra-groups --decode-max-m 32 \
  --csv $S/a/dec.csv > $S/a/dec.log 2>&1 || { echo "rc=$? dec"; tail -3 $S/a/dec.log; }
python3 - $S/a <<'PY' | tee $OUT/summary_a.txt
# one line per (shape, M): every kernel's best time (tune rows: the best split, shown as /sN), decode and cuBLAS beside
import csv, glob, os, sys, collections, re
best = collections.defaultdict(dict)
def put(k, name, us, tag=''):
    if name not in best[k] or us < best[k][name][0]: best[k][name] = (us, tag)
for p in glob.glob(os.path.join(sys.argv[1], 't*.csv')):
    for r in csv.DictReader(open(p)):
        k = (r['shape'], int(r['M'])); us = float(r['us']); err = float(r.get('rel_err') or 0)
        if err > 1e-2: print('BAD', k, r['kernel'], err)
        m = re.match(r'cuda_prefill:wgmma_(.*):s(\d+)$', r['kernel'])
        if m: put(k, m.group(1).replace('_tma', '').replace('_ov', ''), us, '/s' + m.group(2))
        else: put(k, r['kernel'].replace('cuda_prefill', 'pf'), us)
if os.path.exists(os.path.join(sys.argv[1], 'dec.csv')):
    for r in csv.DictReader(open(os.path.join(sys.argv[1], 'dec.csv'))):
        if r['dtype'] == 'float16' and r['kernel'] in ('cuda_decode', 'cublas_f16'): put((r['shape'], int(r['m'])), r['kernel'], float(r['us']))
for k in sorted(best):
    print(k[0], k[1], ' | '.join('%s %.2f%s' % (n, us, t) for n, (us, t) in sorted(best[k].items(), key=lambda x: x[1][0])))
PY
# A2. MoE (Qwen3-30B-A3B, fp16 uint4b8) on the grouped path with the decode-sized tiles: block 16 (configs 35 / 41) and
# block 32 on the grouped path (W4A16_MOE_WGMMA=1: configs 37 / 43) against the chosen default, one process each.
mkdir -p $S/m
for v in "def:::" "b16:16::" "b16eb:16:41,41:" "b32:32::1" "b32o3:32:43,43:1"; do
  IFS=: read -r name blk cfg wg <<< "$v"
  env ${blk:+W4A16_BENCH_MOE_BLOCK=$blk} W4A16_BENCH_MOE_PATHS=chosen ${wg:+W4A16_MOE_WGMMA=$wg} ${cfg:+W4A16_MOE_GROUPED_CONFIGS=$cfg} \
    timeout 60 $B/w4a16_bench_moe $S/m/$name.csv 16,64,256,512 f16 uint4b8 > $S/m/$name.log 2>&1 || { echo "rc=$? moe $name"; tail -3 $S/m/$name.log; }
done
tar -czf $OUT/data.tar.gz -C $S .
python3 - $S/m <<'PY' | tee $OUT/summary_moe.txt
import csv, glob, os, sys
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    for r in csv.DictReader(open(p)):
        print('%-6s T=%-4s block %-3s %-7s %9s us %6s%%  cublas %9s  err %s' % (os.path.basename(p)[:-4], r['T'], r['block'], r['path'],
              r['fused_us'], r['fused_pct_4.4'], r['cublas_loop_us'], r['rel_err_vs_cublas']))
PY
tar -czf $OUT/data.tar.gz -C $S .
OUT=$S/b timeout $((400 - SECONDS)) bash docs/benchmarks/session_2026-12-05_stop49/call3.sh > $S/b/log.txt 2>&1; tail -12 $S/b/log.txt
tar -czf $OUT/data.tar.gz -C $S .
OUT=$S/c timeout $((480 - SECONDS)) bash docs/benchmarks/session_2026-12-05_stop49/call4.sh > $S/c/log.txt 2>&1; tail -5 $S/c/log.txt
tar -czf $OUT/data.tar.gz -C $S .
