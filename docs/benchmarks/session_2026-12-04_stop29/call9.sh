#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 9: 1. every decode GPU test on the final kernels (tiles_math shared by the streaming and
# bulk kernels); 2. the Python package built with CUDA for the device's Python 3.12 (build-pydev, scripts/pack-gpu's
# W4A16_DEVICE_PYTHON way): every pytest, with torch on the GPU: the new MoE binding's CUDA case (every block, ids on
# the device) and the linear / torch-op CUDA cases (decode through the bulk kernel at M = 1).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c9; mkdir -p $W/bin $W/out && tar -xJf .carry-s29/bins9.tar.xz -C $W/bin
timeout 110 $W/bin/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/decode_test.log 2>&1; echo "decode test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/out/decode_test.log | head -5
PYTHONPATH=$W/bin/py timeout 100 python3 -m pytest -q -rs python/tests > $W/out/pytest.log 2>&1; echo "pytest rc=$? t=$(($(date +%s)-T0))"
tail -12 $W/out/pytest.log
gzip -9 $W/out/*.log; tar -czf $OUT/call9.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
