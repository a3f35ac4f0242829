#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 3 (main with the 192 x 128 tile's entries and the cluster-wave guard): every prefill,
# registry and MoE GPU test; `prefill_dq_ab plans` without the guard (83490aa) and with it at the measured cluster
# entries' token counts (points3.txt), and prefill_dq_ab bench at every point whose plan the guard changes on this
# device (3 interleaved rounds); the fp16 uint4b8 hybrid through the registry on nine PERF.md layers at M = 64..1024,
# cuBLAS fp16 in the same process, every row against f64 (the standing).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31; mkdir -p $W
tar -xJf .carry-s31/bins3.tar.xz -C $W
for t in prefill_gpu_test w4a16_test_gpu_registry w4a16_test_gpu_moe; do
  timeout 200 $W/new/$t --gtest_brief=1 > $OUT/call3_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call3_$t.log | head -5
done
SH=$(awk '{printf "%s%s", (NR > 1 ? "," : ""), $1}' .carry-s31/points3.txt)
MS=$(awk '{printf "%s%s", (NR > 1 ? "," : ""), $2}' .carry-s31/points3.txt | tr ',' '\n' | sort -un | paste -sd,)
$W/old/prefill_dq_ab plans $SH $MS > /dev/null 2> $OUT/call3_plans_old.log
$W/new/prefill_dq_ab plans $SH $MS > /dev/null 2> $OUT/call3_plans_new.log
python3 scripts/prefill-ab/plans_diff.py $OUT/call3_plans_old.log $OUT/call3_plans_new.log | tee $OUT/call3_points.txt
echo "guard points: $(awk '{n += split($2, a, ",")} END {print n + 0}' $OUT/call3_points.txt) t=$(($(date +%s)-T0))"
if [ -s $OUT/call3_points.txt ]; then
  timeout 200 bash scripts/prefill-ab/points_ab.sh "$W/old/prefill_dq_ab" "$W/new/prefill_dq_ab" $OUT/call3_points.txt $W/ab 3 > $W/ab_progress.txt 2>&1
  python3 scripts/prefill-ab/ab_table.py $W/ab | tee $OUT/call3_table_ab.txt
fi
timeout 220 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192 \
  --ms 64,128,256,512,1024 --dtypes f16 --scalars uint4b8 --csv $OUT/call3_standing.csv > $OUT/call3_standing.log 2>&1
echo "standing rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call3_standing.log
python3 - $OUT/call3_standing.csv <<'PY'
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])): t[(r['shape'], r['dtype'], r['format'], int(r['m']))][r['kernel'].split(' ')[0]] = (float(r['us']), r['ok'])
cub = {(k[0], k[1], k[3]): v['cublas_f16'][0] for k, v in t.items() if k[2] == 'dense' and 'cublas_f16' in v}
for k in sorted(t):
    h = t[k].get('cuda_hybrid')
    if h and (k[0], k[1], k[3]) in cub: print('%-18s M=%5d hybrid %8.1f cublas %8.1f x%.2f ok=%s' % (k[0], k[3], h[0], cub[(k[0], k[1], k[3])], cub[(k[0], k[1], k[3])] / h[0], h[1]))
PY
tar -czf $OUT/call3_plans.tar.gz -C $OUT call3_plans_old.log call3_plans_new.log call3_points.txt && rm $OUT/call3_plans_old.log $OUT/call3_plans_new.log
gzip -9 $OUT/call3_prefill_gpu_test.log $OUT/call3_w4a16_test_gpu_moe.log $OUT/call3_standing.csv
echo "total $(($(date +%s)-T0)) s"
