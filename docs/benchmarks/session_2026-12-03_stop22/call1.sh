#!/usr/bin/env bash
# stop 22 call 1: prefill-edge A/B + memcheck of edge tests + ncu of three mid-M default plans
H=$OUT; C=.carry-prefill-edge
S=8192x8192:8192:8192,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,qwen0.5b.gate_up:9728:896
PREFILL_AB_BUDGET_S=170 PREFILL_AB_TEST_S=80 PREFILL_AB_SHAPES=$S PREFILL_AB_MS=32,100,200,1000,1024 OUT=$H timeout 180 bash $C/run.sh
. scripts/lib/device-env.sh
W=$(mktemp -d); tar -xJf $C/bins.tar.xz -C $W
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $W/new/prefill_gpu_test --gtest_brief=1 \
  --gtest_filter='*TmaConfigsOnTailsStridesAndActOrder*:*ClusterSplitReduce*' > $W/memcheck.log 2>&1; echo "memcheck rc=$?" >> $W/memcheck.log
tail -5 $W/memcheck.log
for c in 4096,4096:128:o128 6144,4096:256:qkv256 8192,8192:64:sq64 6144,4096:1024:qkv1024; do
  IFS=: read nk m tag <<< "$c"
  W4A16_PREFILL_PROFILE_NK=$nk W4A16_PREFILL_PROFILE_M=$m timeout 60 ncu --clock-control none --kernel-name regex:'prefill_kernel' --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis \
    --import-source no -o $W/$tag $W/new/prefill_bench $W/x.csv profile > $W/$tag.run.txt 2>&1
  ncu --import $W/$tag.ncu-rep --page details > $W/ncu_$tag.details.txt 2>&1
  ncu --import $W/$tag.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $W/ncu_$tag.source.csv.gz
done
tar -czf $H/call1_extra.tar.gz -C $W memcheck.log $(cd $W && ls ncu_* *.run.txt)
