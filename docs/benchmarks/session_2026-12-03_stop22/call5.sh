#!/usr/bin/env bash
# stop 22 call 5 (main = prefill edge + batched split-2 reduce + the new hybrid table): every GPU test binary,
# the hybrid sweeps fp16 and bf16, both paths at M = 4..16 on the six layers of call 4 with the new table
H=$OUT
. scripts/lib/device-env.sh
mkdir -p .gpu && tar -xJf .carry/gpu.tar.xz -C .gpu
W=$(mktemp -d); pids=(); names=()
for t in .gpu/bin/*test*; do
  n=$(basename $t); lim=90; [ $n = prefill_gpu_test ] && lim=200
  timeout $lim $t --gtest_brief=1 > $W/$n.log 2>&1 & pids+=($!); names+=($n)
done
for i in "${!pids[@]}"; do
  if wait ${pids[$i]}; then r=PASS; else r="FAIL rc=$?"; fi
  echo "${names[$i]}: $r $(grep -E '^\[  (PASSED|FAILED) ' $W/${names[$i]}.log | tr '\n' ' ')" >> $H/tests.log
done
grep -h -E "^\[  FAILED  \]" $W/*.log | head -20 >> $H/tests.log
cat $H/tests.log
for dt in f16 bf16; do
  mkdir -p $W/hyb_$dt
  HYBRID_DTYPE=$dt HYBRID_SKIP_TESTS=1 OUT=$W/hyb_$dt timeout 150 bash scripts/hybrid-check > /dev/null 2>&1
  cp $W/hyb_$dt/final.log $H/hybrid_$dt.log; cat $H/hybrid_$dt.log | grep -v "^$" | head -30
done
timeout 100 .gpu/bin/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 \
  --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.o,llama8b.down --ms 4,5,6,7,8,9,10,11,12,13,14,15,16 \
  --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $W/hybrid_4to16.csv > $W/bench_4to16.log 2>&1; echo "bench rc=$?"
python3 bench/gpu/hybrid_report.py $W/hybrid_4to16.csv --markdown > $W/report_4to16.md 2>&1
sed -n '1,/^$/p' $W/report_4to16.md
tar -czf $H/call5_data.tar.gz -C $W .
