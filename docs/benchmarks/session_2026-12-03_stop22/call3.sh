#!/usr/bin/env bash
# stop 22 call 3: (1) prefill-red2 (batched split-2 cluster reduce, occ-1 tiles) against prefill-edge, (2) every
# GPU test binary of the prefill-edge build (.carry/gpu.tar.xz; prefill_gpu_test with a longer limit), (3) the hybrid sweep fp16
H=$OUT
S=llama8b.qkv:6144:4096,8192x8192:8192:8192,llama8b.o:4096:4096,llama8b.down:4096:14336,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896
PREFILL_AB_BUDGET_S=150 PREFILL_AB_TEST_S=30 PREFILL_AB_FIRST_TEST='*ClusterSplitReduce*' PREFILL_AB_SHAPES=$S PREFILL_AB_MS=64,128,200,256,1024 \
  OUT=$H timeout 160 bash .carry-prefill-red2/run.sh
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
tar -czf $H/test_logs.tar.gz -C $W .
HYBRID_SKIP_TESTS=1 OUT=$H timeout 200 bash scripts/hybrid-check > /dev/null 2>&1
tail -30 $H/final.log
