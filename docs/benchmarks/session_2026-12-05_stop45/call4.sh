#!/usr/bin/env bash
# Stop 45, call 4: the one-copy path (Linear::adopt over the caller's tc-layout arrays; w4a16.torch.W4A16PreparedLinear,
# w4a16::gemm_tc, prepare_modules). The registry GPU tests (GpuLayouts.AdoptedTcArraysRunBitEqualToPrepared new), pytest's
# CUDA cases (test_torch_prepared.py new; test_torch_ops.py, test_linear.py), then torch_prepared.py (device memory per
# layer and per-call time, W4A16Linear against W4A16PreparedLinear). Carries: .carry-s45/reg.tar.xz
# (build/tests/gpu/registry/w4a16_test_gpu_registry stripped, in reg/), .carry-s45/py.tar.xz (build-pydev/python/w4a16,
# .so stripped, as stop 44's README says). One archive: $OUT/call4.tar.gz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s45c4_out; mkdir -p $O; trap 'tar -czf $R/call4.tar.gz -C $O .' EXIT
W=/tmp/s45c4; mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py && tar -xJf .carry-s45/reg.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
timeout 200 $W/reg/w4a16_test_gpu_registry --gtest_brief=1 > $O/test_registry.log 2>&1 &
PYTHONPATH=$W/py timeout 240 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_prepared.py \
  python/tests/test_torch_ops.py python/tests/test_linear.py > $O/pytest_gpu.log 2>&1
echo "pytest t=$(($(date +%s)-T0))"; grep -E "FAILED|Error|passed|failed" $O/pytest_gpu.log | tail -8
wait; echo "registry t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is' $O/test_registry.log | head -12
PYTHONPATH=$W/py timeout 120 python3 docs/benchmarks/session_2026-12-05_stop45/torch_prepared.py > $O/torch_prepared.txt 2>&1
cat $O/torch_prepared.txt | tail -6; echo "done t=$(($(date +%s)-T0))"
