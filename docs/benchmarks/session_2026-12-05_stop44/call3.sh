#!/usr/bin/env bash
# Stop 44, call 3: pytest's CUDA cases of the Python package with MoE.drop_host (the torch moe op drops the host copy
# of CUDA experts, rebuilding with the prepared layers carried over), then the MoE layer on this card for the record:
# w4a16_bench_moe (Qwen3-30B-A3B shapes, fused layer against the cuBLAS loop, shared timer, cold L2) at T = 1, 4, 16, 64
# for fp16 uint4b8, bf16 uint4b8, fp16 uint4, bf16 uint4.
# Carry .carry-s44/py.tar.xz (recipe in README.md) and .carry-s44/moe.tar.xz (build/bench/moe/w4a16_bench_moe,
# stripped, in moe/). One archive: $OUT/call3.tar.gz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s44c3_out; mkdir -p $O; trap 'tar -czf $R/call3.tar.gz -C $O .' EXIT
W=/tmp/s44c3; mkdir -p $W/py && tar -xJf .carry-s44/py.tar.xz -C $W/py && tar -xJf .carry-s44/moe.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
PYTHONPATH=$W/py timeout 240 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_ops.py python/tests/test_linear.py \
  python/tests/test_moe.py > $O/pytest_gpu.log 2>&1
echo "pytest t=$(($(date +%s)-T0))"; grep -E "FAILED|Error|passed|failed" $O/pytest_gpu.log | tail -8
for v in "f16 uint4b8" "bf16 uint4b8" "f16 uint4" "bf16 uint4"; do
  set -- $v
  timeout 120 $W/moe/w4a16_bench_moe $O/moe_$1_$2.csv 1,4,16,64 $1 $2 > $O/moe_$1_$2.log 2>&1 || echo "moe $v rc=$?"
  grep -iE "chosen|fused" $O/moe_$1_$2.log | head -8
done
echo "done t=$(($(date +%s)-T0))"
