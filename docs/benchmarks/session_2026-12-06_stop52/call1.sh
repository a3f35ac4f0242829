#!/usr/bin/env bash
# Stop 52 call 1 (carry .carry-s51c4: HEAD cc6e50a's build, comments only since): stop 51's call4.sh (the bf16 hybrid
# check, fp16 M = 4096), then Nsight Compute on the prefill kernel, uint4b8 against uint4, at the 16-token tile
# (llama8b.gate_up M = 16) and the bm64 tile (8192x8192 M = 64): where do the zero points cost 1.2-1.5x?
bash docs/benchmarks/session_2026-12-06_stop51/call4.sh
. scripts/lib/device-env.sh
B=/tmp/s51c4b; W=/tmp/s52prof; rm -rf $W; mkdir -p $W; LOG=$OUT/profile.log; : > $LOG
for c in llama8b.gate_up:16:uint4b8 llama8b.gate_up:16:uint4 8192x8192:64:uint4b8 8192x8192:64:uint4; do
  IFS=: read s m f <<< "$c"; tag=${s}_m${m}_$f
  timeout 120 ncu --clock-control none --kernel-name regex:'prefill_kernel' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters \
    --export $W/$tag $B/w4a16_bench_gpu --registry cuda_prefill --shapes $s --ms $m --dtypes f16 --scalars $f \
    --no-extra-groups --no-cublas --decode-max-m 1 --csv $W/$tag.bench.csv > $W/$tag.run.txt 2>&1 || echo "ncu rc=$? $tag" >> $LOG
  ncu --import $W/$tag.ncu-rep --page details > $W/$tag.details.txt 2>&1
  ncu --import $W/$tag.ncu-rep --page source --csv --print-source sass > $W/$tag.source.csv 2>&1
  { echo "== $tag"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issued Warp|No Eligible|Eligible Warps|Active Warps Per|Warp Cycles Per Issued|Stall|Block Limit|Executed Ipc|Grid Size|Shared Memory Config|Dynamic Shared" $W/$tag.details.txt | head -40; } >> $LOG
  tar -czf $OUT/profile.tar.gz -C $W $(cd $W && ls | grep -v ncu-rep)
done
cat $LOG
