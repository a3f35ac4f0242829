#!/usr/bin/env bash
# Stop 50 call 2: main with the decode-sized tiles merged (configs 35..38, the table entries at M = 1..32). Carry .carry-s50m:
# prefill_gpu_test, prefill_bench, w4a16_bench_gpu of main's Release sm_90a build (`ninja -C build` then strip + tar).
#  1. prefill GPU tests: every config x split (the new tiles), TMA tails, ONE_GROUP, cluster reduce, the default plan on the
#     PERF.md shapes, the row / token splits.
#  2. both paths of the hybrid at M = 8..32 on the six large layers (fp16 uint4b8): cuda_decode, cuda_prefill (the default
#     plan with the new entries) and cuBLAS fp16 in one process: where prefill now beats decode at 9..16.
. scripts/lib/device-env.sh
S=/tmp/s50c2; rm -rf $S; mkdir -p $S /tmp/s50m && tar -xJf .carry-s50m/b.tar.xz -C /tmp/s50m
B=/tmp/s50m
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 $B/prefill_gpu_test --gtest_filter='PrefillGpu.EveryKernelConfigAndSplit:PrefillGpu.TmaConfigsOnTails*:PrefillGpu.OneGroup*:PrefillGpu.ClusterSplit*:PrefillGpu.PlanCoversPerfShapes:PrefillGpu.RowSplit*:PrefillGpu.TokenSplit*:PrefillGpu.EveryConfigurationMatchesReference' \
  > $S/gtest.log 2>&1; echo "gtest rc=$?" | tee -a $OUT/gpu.txt
grep -E "^\[  (FAILED|PASSED|  OK) |^\[==========\]" $S/gtest.log | tee -a $OUT/gpu.txt
grep -B2 -A6 "Failure" $S/gtest.log | head -30 | tee -a $OUT/gpu.txt
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama70b.gate_up,llama8b.o
timeout 150 $B/w4a16_bench_gpu --shapes $SH --ms 8,9,12,16,24,32 --dtypes f16 --scalars uint4b8 --no-extra-groups --decode-max-m 16 --prefill \
  --csv $S/hyb.csv > $S/hyb.log 2>&1 || { echo "rc=$? hyb"; tail -3 $S/hyb.log; }
tar -czf $OUT/data.tar.gz -C $S .
python3 - $S/hyb.csv <<'PY' | tee $OUT/summary.txt
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r['shape'], int(r['m']))][r['kernel']] = (float(r['us']), r.get('ok', ''), r.get('plan', '')[:60])
for k in sorted(t):
    d = t[k]
    print(k[0], k[1], ' | '.join('%s %.2f%s' % (n.replace('cuda_', ''), v[0], '' if v[1] in ('1', 'ok', '') else ' BAD') for n, v in sorted(d.items(), key=lambda x: x[1][0])))
PY
