#!/usr/bin/env bash
# Stop 51 call 1 (one device call, every part archives its data as it ends: $OUT/data.tar.gz, summaries $OUT/summary_*.txt).
# Carries (prepare.sh): .carry-s51m = main's Release sm_90a prefill_gpu_test / prefill_bench / w4a16_bench_gpu (HEAD with
# the decode-sized tiles merged); .carry-s51moe = branch moe-small-grouped's w4a16_bench_moe / w4a16_test_gpu_moe.
#  A. main's prefill GPU tests (every config x split incl. the 16 / 32-token tiles, TMA tails, ONE_GROUP, cluster reduce,
#     the default plan on the PERF.md shapes, row / token splits): the merged build has not run on a GPU yet.
#  B. both paths of the hybrid at M = 8..32 on the six large layers (fp16, uint4b8 and uint4): cuda_decode, cuda_prefill
#     (the default plan: the 16-token tiles' entries at 1..16) and cuBLAS fp16 in one process: the switch per layer.
#  C. MoE (Qwen3-30B-A3B fp16 uint4b8) blocks 16 / 32 on the grouped wgmma path (branch): GPU test of every tile, then
#     T = 64..768 at the chosen block against block 16 (configs 35 / 36) and block 32 grouped (38 / 37).
#  D. stop 49's row-split entries on this device (call3.sh, main's build) and a token sweep of the two candidates
#     (Llama-70B qkv 10240 x 8192, Qwen2.5-7B o 3584 x 3584) with the bm256 s2 tail against the default, 2 rounds.
. scripts/lib/device-env.sh
S=/tmp/s51c1; rm -rf $S; mkdir -p $S/a $S/b $S/c $S/d /tmp/s51m /tmp/s51moe
tar -xJf .carry-s51m/b.tar.xz -C /tmp/s51m && tar -xJf .carry-s51moe/b.tar.xz -C /tmp/s51moe
B=/tmp/s51m; Q=/tmp/s51moe
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
arch() { tar -czf $OUT/data.tar.gz -C $S .; }
# A
timeout 170 $B/prefill_gpu_test --gtest_filter='PrefillGpu.EveryKernelConfigAndSplit:PrefillGpu.TmaConfigsOnTails*:PrefillGpu.OneGroup*:PrefillGpu.ClusterSplit*:PrefillGpu.PlanCoversPerfShapes:PrefillGpu.RowSplit*:PrefillGpu.TokenSplit*:PrefillGpu.EveryConfigurationMatchesReference' \
  > $S/a/gtest.log 2>&1; echo "A gtest rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
grep -E "^\[  (FAILED|PASSED) |^\[==========\]" $S/a/gtest.log | tee -a $OUT/gpu.txt
grep -B2 -A6 "Failure" $S/a/gtest.log | head -30 | tee -a $OUT/gpu.txt
arch
# B
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama70b.gate_up,llama8b.o
timeout 200 $B/w4a16_bench_gpu --shapes $SH --ms 8,9,10,12,14,16,24,32 --dtypes f16 --scalars uint4b8,uint4 --no-extra-groups --decode-max-m 16 --prefill \
  --csv $S/b/hyb.csv > $S/b/hyb.log 2>&1 || { echo "rc=$? hyb"; tail -3 $S/b/hyb.log; }
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
python3 - $S/b/hyb.csv <<'PY' | tee $OUT/summary_b.txt
import csv, sys, collections
t = collections.defaultdict(dict); dense = {}
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r['format'] == 'dense': dense[(r['shape'], int(r['m']))] = (float(r['us']), r['ok'])
for r in rows:
    if r['format'] != 'dense':
        k = (r['shape'], r['format'], int(r['m'])); t[k][r['kernel']] = (float(r['us']), r['ok'])
        if (k[0], k[2]) in dense: t[k]['cublas'] = dense[(k[0], k[2])]
for k in sorted(t):
    d = t[k]; dec = d.get('cuda_decode', (0,))[0]; pre = d.get('cuda_prefill', (0,))[0]
    print('%-17s %-8s M=%-3d dec/pre %.3f | ' % (k[0], k[1], k[2], dec / pre if pre else 0) +
          ' | '.join('%s %.2f%s' % (n.replace('cuda_', ''), v[0], '' if v[1] == '1' else ' BAD') for n, v in sorted(d.items(), key=lambda x: x[1][0])))
PY
# C
timeout 120 $Q/w4a16_test_gpu_moe --gtest_filter='MoeGpuGrouped.*:*EveryPathMatchesTheReference*' > $S/c/gtest.log 2>&1
echo "C gtest rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
grep -E "^\[  (FAILED|PASSED) |^\[==========\]" $S/c/gtest.log | tail -6 | tee -a $OUT/gpu.txt
grep -B2 -A6 "Failure" $S/c/gtest.log | head -20 | tee -a $OUT/gpu.txt
for v in "def:::" "b16:16::" "b16n64:16:36,36:" "b16mix:16:35,36:" "b32:32::1" "b32o2:32:37,37:1" "b32mma:32::0"; do
  IFS=: read -r name blk cfg wg <<< "$v"
  env ${blk:+W4A16_BENCH_MOE_BLOCK=$blk} W4A16_BENCH_MOE_PATHS=chosen ${wg:+W4A16_MOE_WGMMA=$wg} ${cfg:+W4A16_MOE_GROUPED_CONFIGS=$cfg} \
    timeout 60 $Q/w4a16_bench_moe $S/c/$name.csv 64,128,192,256,384,512,768 f16 uint4b8 > $S/c/$name.log 2>&1 || { echo "rc=$? moe $name"; tail -3 $S/c/$name.log; }
done
echo "C done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
python3 - $S/c <<'PY' | tee $OUT/summary_c.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(dict)
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    for r in csv.DictReader(open(p)):
        t[int(r['T'])][os.path.basename(p)[:-4]] = (float(r['fused_us']), r['block'], r['path'], r['rel_err_vs_cublas'])
for T in sorted(t):
    d = t[T]; base = d.get('def', (0,))[0]
    print('T=%-4d ' % T + ' | '.join('%s b%s %.1f (%.3f)' % (n, v[1], v[0], v[0] / base if base else 0) for n, v in sorted(d.items(), key=lambda x: x[1][0])))
PY
# D
OUT=$S/d timeout $((560 - SECONDS)) bash docs/benchmarks/session_2026-12-06_stop51/rowsplit.sh > $S/d/log.txt 2>&1; tail -4 $S/d/log.txt
echo "D done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
