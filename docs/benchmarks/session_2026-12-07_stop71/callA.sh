#!/usr/bin/env bash
# Stop 71 call A (carry .carry-l71: new/ = this stop's build with the two table entries, old/ = main b1f063f's prefill_dq_ab):
# the whole prefill_gpu_test of the new build (ClusterEntriesTakenWhereTheirWavesHold among them), then the interleaved A/B
# of the default plans, old against new, at the points of the changed ranges and beside them (5 rounds).
set -u
. scripts/lib/device-env.sh
S=/tmp/s71a; rm -rf $S; mkdir -p $S
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf ${CARRY:-.carry-l71}/b.tar.xz -C $S
timeout 240 $S/new/prefill_gpu_test > $OUT/prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|cluster entry|tests ran" $OUT/prefill_gpu_test.log | tail -12
for b in old new; do $S/$b/prefill_dq_ab plans llama8b.qkv:6144:4096,llama8b.down:4096:14336 150,160,161,176,192,193,224,256 > $OUT/plans_$b.txt 2>&1; done
printf '%s\n' "llama8b.qkv:6144:4096 160,161,176,192,224" "llama8b.down:4096:14336 192,193,208,224,240,256" > $S/points.txt
bash scripts/prefill-ab/points_ab.sh $S/old/prefill_dq_ab $S/new/prefill_dq_ab $S/points.txt $S/ab ${ROUNDS:-5} > $OUT/ab.txt 2>&1
echo "ab (${SECONDS}s)" | tee -a $OUT/gpu.txt
tar -czf $OUT/ab.tar.gz -C $S ab
