#!/usr/bin/env bash
# Stop 45, call 8: the MoE's one-copy path (CudaMoe::adopt, W4A16PreparedMoE, w4a16::moe_tc) and the final package:
# the MoE GPU tests (MoeGpuAdopt new, and every other), the registry GPU tests, pytest's CUDA cases (test_torch_prepared,
# test_torch_ops, test_moe, test_linear), then moe_prepared.py and torch_prepared.py. Carries: .carry-s45/py.tar.xz,
# .carry-s45/reg.tar.xz, .carry-s45/moet.tar.xz (build/tests/gpu/moe/w4a16_test_gpu_moe stripped, in moet/).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s45c8_out; mkdir -p $O; trap 'tar -czf $R/call8.tar.gz -C $O .' EXIT
W=/tmp/s45c8; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py && tar -xJf .carry-s45/reg.tar.xz -C $W \
  && tar -xJf .carry-s45/moet.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
(timeout 200 $W/moet/w4a16_test_gpu_moe --gtest_brief=1 > $O/test_moe.log 2>&1; timeout 120 $W/reg/w4a16_test_gpu_registry \
  --gtest_brief=1 > $O/test_registry.log 2>&1) &
PYTHONPATH=$W/py timeout 240 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_prepared.py \
  python/tests/test_torch_ops.py python/tests/test_linear.py python/tests/test_moe.py > $O/pytest_gpu.log 2>&1
echo "pytest t=$(($(date +%s)-T0))"; grep -E "FAILED|Error|passed|failed" $O/pytest_gpu.log | tail -8
wait; echo "gtest t=$(($(date +%s)-T0))"
for f in test_moe test_registry; do echo "$f:"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is' $O/$f.log | head -8; done
PYTHONPATH=$W/py timeout 150 python3 docs/benchmarks/session_2026-12-05_stop45/moe_prepared.py > $O/moe_prepared.txt 2>&1
PYTHONPATH=$W/py timeout 100 python3 docs/benchmarks/session_2026-12-05_stop45/torch_prepared.py > $O/torch_prepared.txt 2>&1
tail -3 $O/moe_prepared.txt; tail -3 $O/torch_prepared.txt; echo "done t=$(($(date +%s)-T0))"
