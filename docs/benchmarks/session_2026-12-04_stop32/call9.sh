#!/usr/bin/env bash
# Session 2026-12-04 stop 32, call 9 (main 6de10dd, the final code): Nsight Compute on the MoE ring kernels (the bench's
# first, eager call of the chosen path: GEMM 1 and GEMM 2) at T = 1 (direct, folded GEMM 2) and T = 16 (block 8, fused
# alignment), fp16 uint4b8: speed of light, scheduler, warp states (stall reasons), instruction mix. Clocks left alone.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s32c9; mkdir -p $W/out && tar -xJf .carry-s32/bins9.tar.xz -C $W
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
for T in 1 16; do
  W4A16_BENCH_MOE_PATHS=chosen timeout 200 $NCU --clock-control none -k regex:moe_ring_kernel --launch-count 2 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy \
    --section MemoryWorkloadAnalysis $W/new/w4a16_bench_moe $W/out/ncu_bench_T$T.csv $T f16 uint4b8 > $W/out/ncu_T$T.txt 2>&1
  echo "T=$T rc=$? t=$(($(date +%s)-T0))"
done
for T in 1 16; do echo "== T=$T"; grep -E "moe_ring_kernel|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Active Warps Per Scheduler|Eligible Warps Per Scheduler|Warp Cycles Per Issued|Executed Ipc Active|Executed Instructions  |Achieved Occupancy|Registers Per|stall|Stall" $W/out/ncu_T$T.txt | head -60; done
tar -czf $OUT/call9.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
