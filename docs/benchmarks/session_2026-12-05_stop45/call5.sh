#!/usr/bin/env bash
# Stop 45, call 5: the one-copy path with a shared workspace (Linear options own_workspace = false; the CUDA calls of
# w4a16::gemm / gemm_tc / moe share one workspace per device and stream). The registry GPU tests, pytest's CUDA cases of
# test_torch_prepared.py, test_torch_ops.py, test_linear.py and test_moe.py, then torch_prepared.py (device memory per
# layer, per-call time). Carries as call4.sh's
# (.carry-s45/reg.tar.xz, .carry-s45/py.tar.xz, rebuilt). One archive: $OUT/call5.tar.gz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s45c5_out; mkdir -p $O; trap 'tar -czf $R/call5.tar.gz -C $O .' EXIT
W=/tmp/s45c5; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py && tar -xJf .carry-s45/reg.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
timeout 200 $W/reg/w4a16_test_gpu_registry --gtest_brief=1 > $O/test_registry.log 2>&1 &
PYTHONPATH=$W/py timeout 240 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_prepared.py \
  python/tests/test_torch_ops.py python/tests/test_linear.py python/tests/test_moe.py > $O/pytest_gpu.log 2>&1
echo "pytest t=$(($(date +%s)-T0))"; grep -E "FAILED|Error|passed|failed" $O/pytest_gpu.log | tail -8
wait; echo "registry t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is' $O/test_registry.log | head -12
PYTHONPATH=$W/py timeout 150 python3 docs/benchmarks/session_2026-12-05_stop45/torch_prepared.py > $O/torch_prepared.txt 2>&1
tail -4 $O/torch_prepared.txt; echo "done t=$(($(date +%s)-T0))"
