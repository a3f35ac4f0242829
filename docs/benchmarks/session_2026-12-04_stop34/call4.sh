#!/usr/bin/env bash
# Session 2026-12-04 stop 34, call 4: why call 3's "diag" (the offset-free bf16 dequantization alone: 7 instructions a
# word against 11, no unit sums; wrong results, timing only) runs 1.06-1.08x the time of main's ring: Nsight Compute on
# the MoE ring kernels (the bench's first launches of GEMM 1 and GEMM 2, clocks left alone), bf16 uint4b8 T = 16, main
# ("base") against "diag": SM frequency, issue slots, instructions, warp stall reasons. Then main's decode GPU test
# binary (main's kernels) with the new one-signed bf16 activation test and the bulk / every-configuration tests.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s34c4; mkdir -p $W/out && tar -xJf .carry-s34/bins4.tar.xz -C $W
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
for v in base diag; do
  W4A16_BENCH_MOE_PATHS=chosen timeout 150 $NCU --clock-control none -k regex:moe_ring_kernel --launch-count 2 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats \
    $W/$v/w4a16_bench_moe $W/out/ncu_bench_$v.csv 16 bf16 uint4b8 > $W/out/ncu_$v.txt 2>&1
  echo "$v rc=$? t=$(($(date +%s)-T0))"
done
for v in base diag; do echo "== $v"; grep -E "moe_ring_kernel|Duration|SM Frequency|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Eligible Warps Per Scheduler|Warp Cycles Per Issued|Executed Ipc Active|Executed Instructions  |Elapsed Cycles" $W/out/ncu_$v.txt | head -40; done
timeout 200 $W/main/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bf16OneSignedActivations:Decode.Bulk*:Decode.EveryConfigurationM1To16' > $W/out/test_decode.log 2>&1
echo "decode tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_decode.log | head -8
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
