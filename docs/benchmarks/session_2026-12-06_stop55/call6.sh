#!/usr/bin/env bash
# Stop 55 call 6 (carry .carry-s55e: prefill_gpu_test and w4a16_test_prefill_host at the per_kernel_count commit): the
# occupancy cache shared by the cluster count and the persistent loop's resident CTAs, checked where it is read: the
# cluster / plan / row-split tests, the persistent loop's test, the host suite on the device.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c6; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s55e/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 240 $S/b/prefill_gpu_test --gtest_brief=1 --gtest_filter='*Cluster*:*AutomaticReduce*:*SixteenToken*:*PlanCoversPerfShapes*:*RowSplit*:*TokenSplit*:*PersistentTileLoop*:*GraphCapture*:*Chained*' > $OUT/prefill_gpu_test.log 2>&1
echo "prefill_gpu_test rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt; tail -3 $OUT/prefill_gpu_test.log
$S/b/w4a16_test_prefill_host --gtest_brief=1 > $OUT/host.log 2>&1; echo "host rc=$?" | tee -a $OUT/gpu.txt; tail -2 $OUT/host.log
