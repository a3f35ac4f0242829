#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 6 (main with the seven Qwen entries of call 4 and two candidates of call 5's tune):
# prefill_dq_ab A/B of the two candidates against the build before them (3 interleaved rounds); every prefill GPU test
# and the registry GPU tests; the fp16 uint4b8 hybrid on the Qwen2.5-0.5B layers at M = 1024 / 1536 / 2048 / 4096 and
# llama8b.qkv at M = 520 against cuBLAS fp16 (the standing; every row against f64).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins6.tar.xz -C $W
bash scripts/prefill-ab/points_ab.sh "$W/old/prefill_dq_ab" "$W/new/prefill_dq_ab" .carry-s27/points6.txt $W/ab 3 | tee $OUT/call6_table_ab.txt
echo "ab t=$(($(date +%s)-T0))"
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 170 $W/new/$t --gtest_brief=1 > $OUT/call6_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED|gpu dense" $OUT/call6_$t.log | head
done
gzip -9 $OUT/call6_prefill_gpu_test.log
timeout 120 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down --ms 1024,1536,2048,4096 --dtypes f16 --scalars uint4b8 \
  --csv $OUT/call6_qwen_standing.csv > $OUT/call6_qwen_standing.log 2>&1
echo "standing rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call6_qwen_standing.log
timeout 60 $W/new/w4a16_bench_gpu --registry cuda_hybrid --no-extra-groups --decode-max-m 16 \
  --shapes llama8b.qkv --ms 520,576 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/call6_qkv520.csv > $OUT/call6_qkv520.log 2>&1
echo "qkv 520 rc=$? t=$(($(date +%s)-T0))"; tail -1 $OUT/call6_qkv520.log
python3 - $OUT/call6_qwen_standing.csv $OUT/call6_qkv520.csv <<'PY'
import csv, sys, collections
for p in sys.argv[1:]:
    t = collections.defaultdict(dict)
    for r in csv.DictReader(open(p)): t[(r['shape'], r['dtype'], r['format'], int(r['m']))][r['kernel'].split(' ')[0]] = (float(r['us']), r['ok'])
    cub = {(k[0], k[1], k[3]): v['cublas_f16' if k[1] == 'float16' else 'cublas_bf16'][0] for k, v in t.items() if k[2] == 'dense'}
    for k in sorted(t):
        h = t[k].get('cuda_hybrid')
        if h and (k[0], k[1], k[3]) in cub: print('%-18s %-8s %-8s M=%5d hybrid %8.1f cublas %8.1f x%.2f ok=%s' % (k + (h[0], cub[(k[0], k[1], k[3])], cub[(k[0], k[1], k[3])] / h[0], h[1])))
PY
echo "total $(($(date +%s)-T0)) s"
