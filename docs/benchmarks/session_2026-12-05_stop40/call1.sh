#!/usr/bin/env bash
# Stop 40, call 1 (prepared; no device was lent in stop 40): stop 39's call 4 (main 5ee3129's decode and registry GPU
# tests, an A/B against a2b78f7 at M = 9 / 12 / 16, both paths on llama8b.down / o at M = 8..16 for the hybrid switch),
# then branch moe-device-router (main of stop 40 + the router logits on the device): its MoE GPU tests (the new
# MoeGpuRouting.RouterLogitsMatchTheHost among them) and its Python package built with CUDA for the device's Python 3.12
# (MoE.from_experts / from_canonical, the torch op w4a16::moe, W4A16MoE, Mixtral's names, routing by the router on the
# GPU): pytest test_torch_ops.py + test_moe.py with their CUDA cases.
# Carry: .carry-s39 (main3.tar.xz, main4.tar.xz) and .carry-s40 (py.tar.xz: w4a16/ = build-pydev/python/w4a16 and
# bin/w4a16_test_gpu_moe of the branch, stripped).
# Run from the repository root (a checkout of the branch): bash docs/benchmarks/session_2026-12-05_stop40/call1.sh
# (~6 minutes; its parts time out at 200 + 4 x 120 + 150 + 200 + 180 s in the worst case: run it with timeout_s 600)
T0=$(date +%s)
bash docs/benchmarks/session_2026-12-05_stop39/call4.sh
echo "== stop 39 call 4 done t=$(($(date +%s)-T0))"
. scripts/lib/device-env.sh
P=/tmp/s40c1; mkdir -p $P/out && tar -xJf .carry-s40/py.tar.xz -C $P
timeout 200 $P/bin/w4a16_test_gpu_moe --gtest_brief=1 > $P/out/test_moe_gpu.log 2>&1; echo "moe GPU tests rc=$? t=$(($(date +%s)-T0))"
grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $P/out/test_moe_gpu.log | head -8
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
PYTHONPATH=$P timeout 180 python3 -m pytest -v -p no:cacheprovider -rs python/tests/test_torch_ops.py python/tests/test_moe.py \
  > $P/out/pytest_gpu.log 2>&1; echo "pytest rc=$? t=$(($(date +%s)-T0))"
echo "CUDA cases passed: $(grep -c 'cuda.*PASSED' $P/out/pytest_gpu.log), failed: $(grep -c 'FAILED' $P/out/pytest_gpu.log)"
grep -E "FAILED|SKIPPED|passed|failed" $P/out/pytest_gpu.log | tail -15
tar -czf $OUT/call1_py.tar.gz -C $P/out .
echo "total $(($(date +%s)-T0)) s"
