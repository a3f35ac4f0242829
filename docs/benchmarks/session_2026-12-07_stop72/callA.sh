#!/usr/bin/env bash
# Stop 72 call A (carries .carry-l72a: main 7b75fa6's w4a16_bench_gpu + prefill_gpu_test, stripped; .carry-l71e: the
# same main's prefill_bench): stop 71's M = 101..128 llama8b.down entry against f64 at its real size (the registry's
# hybrid and prefill paths, with the workspace the registry sizes); on an H200 only, issue 5's rows (stop 63 callN,
# STEPS="mid large"); Nsight Compute on decode M = 16 (the streaming kernel's default plan and the bulk kernel with x
# streamed, forced: pipe utilisation and stall reasons, which bound the 9..16-token loop); then the whole prefill_gpu_test.
set -u
. scripts/lib/device-env.sh
S=/tmp/s72a; rm -rf $S; mkdir -p $S
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l72a/g.tar.xz -C $S
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 120 $S/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-cublas --shapes llama8b.down \
  --ms 100,101,112,128,129 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $OUT/f64.csv > $OUT/f64.log 2>&1
log "f64 rc=$?"; tail -3 $OUT/f64.log
if grep -q H200 $OUT/gpu.txt; then
  mkdir -p $OUT/n
  OUT=$OUT/n STEPS="mid large" CARRY=.carry-l71e bash docs/benchmarks/session_2026-12-06_stop63/callN.sh > $OUT/n.txt 2>&1
  log "callN rc=$?"
fi
P=$OUT/prof; mkdir -p $P
for c in "8192x8192:16:def" "8192x8192:16:bulk" "llama70b.gate_up:16:def" "llama70b.gate_up:16:bulk"; do
  IFS=: read -r s m v <<< "$c"; tag=${s}_m${m}_$v
  env $( [ $v = bulk ] && echo W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1 ) timeout 100 ncu --clock-control none \
    --kernel-name regex:'decode_.*kernel' --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats \
    --section MemoryWorkloadAnalysis --export $S/$tag $S/w4a16_bench_gpu --shapes $s --ms $m --dtypes f16 --scalars uint4b8 \
    --no-extra-groups --no-cublas --csv $S/$tag.csv > $P/$tag.run.txt 2>&1 || log "ncu rc=$? $tag"
  ncu --import $S/$tag.ncu-rep --page details > $P/$tag.details.txt 2>&1
  log "prof $tag"
done
timeout 240 $S/prefill_gpu_test > $OUT/prefill_gpu_test.log 2>&1; log "prefill_gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $OUT/prefill_gpu_test.log | tail -8
