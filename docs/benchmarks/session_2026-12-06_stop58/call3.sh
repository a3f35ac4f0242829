#!/usr/bin/env bash
# Stop 58 call 3 (carry .carry-m58 = prefill_bench / prefill_gpu_test of main 051e88b: llama70b.gate_up M = 193..256 on
# the row split; .carry-v58 = the same of branch prefill-tail-vec: the split tail's parts as float4 per thread; both
# stripped, XZ_OPT="-9e -T2").
#  A. the branch's persistent test (tail tiles bitwise against the split plan, 2-part tails included) and the row-split
#     tests (the new entry taken on 132 SMs, correct on both parts);
#  B. the split tail's float4 parts against main's scalar ones: per binary, 2 processes each, alternating: llama8b.qkv
#     M = 1024 (config 20 s1 = the split tail; the default = the row split, unchanged: the in-process control) and
#     llama70b.gate_up M = 256 with W4A16_PREFILL_ROW_SPLIT=0 (the default = the bm256 s1 entry's split tail), 10 rounds;
#  C. main's new default for llama70b.gate_up M = 200 / 224 / 256 against cuBLAS fp16 and bf16, 16 rounds.
set -u
. scripts/lib/device-env.sh
S=/tmp/s58c3; rm -rf $S; mkdir -p $S/m $S/v && tar -xJf .carry-m58/b.tar.xz -C $S/m && tar -xJf .carry-v58/b.tar.xz -C $S/v
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 $S/v/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Persistent*:*RowSplit*' > $S/tests_v.log 2>&1; echo "tests (vec) rc=$?" | tee -a $OUT/gpu.txt
grep -E "^\[  (PASSED|FAILED) |row split .*M=|Failure" $S/tests_v.log | head -20 | tee -a $OUT/gpu.txt
echo "A done ${SECONDS}s" | tee -a $OUT/gpu.txt
il() {  # tag binary shape M [env...]
  local tag=$1 b=$2 sh=$3 m=$4; shift 4
  env "$@" W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=$sh W4A16_PREFILL_TUNE_MS=$m W4A16_PREFILL_TUNE_CONFIGS=20 \
    W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=${ROUNDS:-10} \
    timeout 60 $S/$b/prefill_bench $S/$tag.csv tune_tma > $S/$tag.log 2>&1 || echo "rc=$? $tag" | tee -a $OUT/gpu.txt
}
for r in 1 2; do
  for b in m v; do
    il qkv_${b}_$r $b llama8b.qkv 1024
    il g70_${b}_$r $b llama70b.gate_up 256 W4A16_PREFILL_ROW_SPLIT=0
  done
  echo "B round $r ${SECONDS}s" | tee -a $OUT/gpu.txt
done
for f in $S/qkv_*.csv $S/g70_*.csv; do
  python3 - "$f" <<'PY' | tee -a $OUT/gpu.txt
import csv, sys, os
rows = {r['kernel']: float(r['us']) for r in csv.DictReader(open(sys.argv[1])) if r['kernel'].endswith('_il')}
c = rows.get('cublas_f16_il'); d = rows.get('cuda_prefill_il'); t = [v for k, v in rows.items() if k.startswith('cuda_prefill:')]
t = t[0] if t else float('nan')
print('%-14s cuBLAS %.2f default %.2f (x%.3f) cfg20 s1 %.2f (x%.3f) cfg20/default %.3f' % (os.path.basename(sys.argv[1]), c, d, c / d, t, c / t, t / d))
PY
done
ROUNDS=16
for dt in f16 bf16; do
  W4A16_PREFILL_TUNE_DTYPE=$dt W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=200,224,256 \
    W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=16 \
    timeout 120 $S/m/prefill_bench $S/new_$dt.csv tune_tma > $S/new_$dt.log 2>&1 || echo "rc=$? new $dt" | tee -a $OUT/gpu.txt
  echo "C $dt ${SECONDS}s" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/new_f16.csv | tee $OUT/new_f16.txt
python3 scripts/prefill-ab/il_table.py $S/new_bf16.csv | tee $OUT/new_bf16.txt
grep -h "^clock" $S/*.log > $OUT/clocks.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=m --exclude=v .
