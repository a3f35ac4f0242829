#!/usr/bin/env bash
# Session 2026-12-04 stop 35, call 2 (PREPARED, NOT RUN; optional): Nsight Compute of main's decode kernels where issue 4
# misses most, to say whether the 9..16-token loop waits on dependent mma (as stop 34 found for the MoE ring) or on issue:
# 8192x8192 and llama8b.gate_up at M = 16 (the streaming kernel, 45 / 51% of 4.4 TB/s) and M = 4 / 8 (the bulk kernel,
# 55-71%), fp16 uint4b8 g = 128, one launch each, clocks left alone. Carry .carry-s35 (base = main 6fd6703's w4a16_bench_gpu).
# Per case: duration, DRAM throughput, issue slots, eligible / active warps per scheduler, warp-state stall breakdown, and the
# SASS source page (per-instruction stall samples) in the tarball.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s35c2; mkdir -p $W/out && tar -xJf .carry-s35/bins1.tar.xz -C $W base/w4a16_bench_gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for c in 8192x8192:16 llama8b.gate_up:16 8192x8192:8 llama8b.gate_up:4; do
  s=${c%%:*}; m=${c##*:}; tag="${s}_m${m}"
  timeout 150 ncu --clock-control none --kernel-name regex:'decode_(bulk_)?kernel' --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters \
    --export "$W/out/$tag" $W/base/w4a16_bench_gpu --shapes "$s" --ms "$m" --dtypes f16 --scalars uint4b8 \
    --no-extra-groups --no-cublas --csv "$W/out/$tag.bench.csv" > "$W/out/$tag.run.txt" 2>&1 || echo "ncu rc=$? for $tag"
  ncu --import "$W/out/$tag.ncu-rep" --page details > "$W/out/$tag.details.txt" 2>&1
  ncu --import "$W/out/$tag.ncu-rep" --page source --csv --print-source sass > "$W/out/$tag.source.csv" 2>&1
  echo "== $tag t=$(($(date +%s)-T0))"
  grep -E "Function Name|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Eligible Warps|Active Warps Per|Warp Cycles Per Issued|Stall" \
    "$W/out/$tag.details.txt" | head -30
done
rm -f $W/out/*.ncu-rep
tar -czf $OUT/call2.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
