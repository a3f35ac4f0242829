#!/usr/bin/env bash
# Stop 51 call 3: HEAD after call 2 (the 16-token entries' timed_clusters, the llama8b.qkv / o switch, MoE block 16 up to
# 14 slots per expert, the two fixed GPU tests). Carry .carry-s51c3 (prepare2.sh with CARRY=.carry-s51c3).
#  A. prefill GPU tests of the plan and the early-issue twins; the MoE edge / grouped tests.
#  B. the hybrid (registry cuda_hybrid) and prefill path at M = 1..32 on the six large layers (uint4b8), M = 8 / 9 / 16
#     uint4 on llama8b.qkv / o; decode to 64 and cuBLAS fp16 in the same process; hybrid_report.py.
#  C. MoE fp16 uint4b8 chosen block at T = 208 / 224 / 240 (block 16 up to 14 slots per expert) against block 32.
. scripts/lib/device-env.sh
S=/tmp/s51c3; rm -rf $S; mkdir -p $S/a $S/b $S/c /tmp/s51c3b && tar -xJf .carry-s51c3/b.tar.xz -C /tmp/s51c3b
B=/tmp/s51c3b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
arch() { tar -czf $OUT/data.tar.gz -C $S .; }
timeout 120 $B/prefill_gpu_test --gtest_filter='PrefillGpu.EarlyIssue*:PrefillGpu.SixteenToken*:PrefillGpu.PlanCoversPerfShapes:PrefillGpu.ClusterSplit*:PrefillGpu.RowSplit*' > $S/a/prefill.log 2>&1 &
timeout 120 $B/w4a16_test_gpu_moe --gtest_filter='MoeGpuEdge.*:MoeGpuGrouped.*' > $S/a/moe.log 2>&1 &
wait
for f in prefill moe; do echo "$f: $(grep -E '^\[  (PASSED|FAILED) ' $S/a/$f.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt; done
grep -h -B3 -A8 "Failure" $S/a/*.log | head -30 | tee -a $OUT/gpu.txt
grep -h "16-token entry\|^row split" $S/a/prefill.log | tee -a $OUT/gpu.txt
echo "A done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
timeout 120 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,8,9,12,16,32 \
  --shapes $SH --dtypes f16 --scalars uint4b8 --csv $S/b/hyb_sym.csv > /dev/null 2> $S/b/err.txt || echo "rc=$? sym" | tee -a $OUT/gpu.txt
timeout 60 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 8,9,16 \
  --shapes llama8b.qkv,llama8b.o --dtypes f16 --scalars uint4 --csv $S/b/hyb_asym.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? asym" | tee -a $OUT/gpu.txt
for f in sym asym; do python3 bench/gpu/hybrid_report.py $S/b/hyb_$f.csv --markdown > $S/b/report_$f.md 2>&1; sed -n '1,/^$/p' $S/b/report_$f.md | tee -a $OUT/summary_b.txt; done
python3 - $S/b/hyb_sym.csv <<'PY' | tee -a $OUT/summary_b.txt
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    t[(r['shape'], int(r['m']))][r['kernel']] = float(r['us'])
for k in sorted(t):
    print(k[0], k[1], ' | '.join('%s %.2f' % (n, u) for n, u in sorted(t[k].items(), key=lambda x: x[1])))
PY
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
for blk in chosen 32; do
  env $([ $blk != chosen ] && echo W4A16_BENCH_MOE_BLOCK=$blk) W4A16_BENCH_MOE_PATHS=chosen \
    timeout 60 $B/w4a16_bench_moe $S/c/b$blk.csv 208,224,240 f16 uint4b8 > $S/c/b$blk.log 2>&1 || { echo "rc=$? moe $blk"; tail -3 $S/c/b$blk.log; }
done
for f in $S/c/b*.csv; do cut -d, -f1-12 $f | tee -a $OUT/summary_c.txt; done
echo "C done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
# E. the two new row-split entries (Llama-70B qkv M = 1000, Qwen2.5-7B o M = 1500) as the default, switch 0 / 1, cuBLAS fp16.
for rs in 0 1; do
  W4A16_PREFILL_ROW_SPLIT=$rs W4A16_PREFILL_TUNE_MS=1000,1500 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_TUNE_CONFIGS=20 \
  W4A16_PREFILL_TUNE_SHAPES=l70b.qkv:10240:8192,q7b.o:3584:3584 timeout 60 $B/prefill_bench $S/c/rs$rs.csv tune_tma > $S/c/rs.log 2>&1 || tail -3 $S/c/rs.log
done
for rs in 0 1; do grep -E "^(cuda_prefill|cublas_f16)," $S/c/rs$rs.csv | cut -d, -f1,2,5,10 | sed "s/^/switch $rs: /" | tee -a $OUT/summary_d.txt; done
echo "E done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
# D. llama8b.gate_up M = 1024 (0.93x cuBLAS in call 2): every TMA tile at splits 1 / 2 against the plan, and the row split
#    (bm256 head over its full waves + bm256 s2 / bm128_bn128 occ2 s2 tails), cuBLAS fp16 in the same process.
W4A16_PREFILL_TUNE_MS=1024 W4A16_PREFILL_TUNE_SPLITS=1,2 W4A16_PREFILL_TUNE_SHAPES=llama8b.gate_up W4A16_PREFILL_ROWSPLIT_HEAD=20 \
  W4A16_PREFILL_ROWSPLIT_TAILS=20:2,32:2 timeout 100 $B/prefill_bench $S/c/gu1024.csv tune_tma > $S/c/gu1024.log 2>&1 || tail -3 $S/c/gu1024.log
python3 - $S/c/gu1024.csv <<'PY' | tee -a $OUT/summary_d.txt
import csv, sys
rows = sorted(csv.DictReader(open(sys.argv[1])), key=lambda r: float(r['us']))
for r in rows[:12]: print('%-60s %8s us  %s' % (r['kernel'][:60], r['us'], r['plan'][:70]))
PY
echo "D done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
