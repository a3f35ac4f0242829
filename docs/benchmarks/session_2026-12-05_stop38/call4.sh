#!/usr/bin/env bash
# Stop 38, call 4. Carry .carry-s38 (bins.tar.xz: main 89f8ea1 = stop 35's two uint4b8 tile-pair candidates merged, sm_90a,
# stripped: w4a16_bench_gpu, w4a16_test_gpu_decode, w4a16_test_gpu_moe, w4a16_bench_moe) and .carry-sm80 (the same main, built
# by `scripts/gpu-check-sm80 pack`: W4A16_CUDA_ARCHS=80 + compute_80 PTX).
#  1. every decode and MoE GPU test of the merged build, and the sm_80 code's prefill tests (the two fixed expectations);
#  2. Nsight Compute of the decode kernels where issue 4 misses most (8192x8192 M = 16 streaming, M = 8 bulk; merged build);
#  3. the hybrid through the registry, sm_90a build against the sm_80 code on the same H200 (stop 36 call 2), one round.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s38c4; mkdir -p $W/out $W/s90 $W/s80
tar -xJf .carry-s38/bins.tar.xz -C $W/s90 --strip-components=1 && tar -xJf .carry-sm80/bins.tar.xz -C $W/s80 --strip-components=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
export CUDA_CACHE_PATH=/tmp/sm80-jit CUDA_CACHE_MAXSIZE=4294967296
timeout 300 $W/s90/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1 &
timeout 300 $W/s90/w4a16_test_gpu_moe --gtest_brief=1 > $W/out/test_moe.log 2>&1 &
timeout 300 $W/s80/prefill_gpu_test --gtest_brief=1 > $W/out/test_prefill_sm80.log 2>&1 &
wait
for t in decode moe prefill_sm80; do echo "$t tests t=$(($(date +%s)-T0)): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $W/out/test_$t.log | tr '\n' ' ')"; grep -E '^\[  FAILED' $W/out/test_$t.log | head -5; done
tar -czf $OUT/call4_tests.tar.gz -C $W/out .  # what has come so far, in case a later stage runs out of time
for c in 8192x8192:16; do  # (trimmed from 4 cases: < 10 min of device time left after the refused starts)
  s=${c%%:*}; m=${c##*:}; tag="${s}_m${m}"
  timeout 150 ncu --clock-control none --kernel-name regex:'decode_(bulk_)?kernel' --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters \
    --export "$W/out/$tag" $W/s90/w4a16_bench_gpu --shapes "$s" --ms "$m" --dtypes f16 --scalars uint4b8 \
    --no-extra-groups --no-cublas --csv "$W/out/$tag.bench.csv" > "$W/out/$tag.run.txt" 2>&1 || echo "ncu rc=$? for $tag"
  ncu --import "$W/out/$tag.ncu-rep" --page details > "$W/out/$tag.details.txt" 2>&1
  ncu --import "$W/out/$tag.ncu-rep" --page source --csv --print-source sass > "$W/out/$tag.source.csv" 2>&1
  echo "== $tag t=$(($(date +%s)-T0))"
  grep -E "Function Name|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Eligible Warps|Active Warps Per|Warp Cycles Per Issued|Stall" \
    "$W/out/$tag.details.txt" | head -30
done
rm -f $W/out/*.ncu-rep
tar -czf $OUT/call4_ncu.tar.gz -C $W/out .
ARGS="--shapes 8192x8192,llama8b.gate_up,qwen0.5b.qkv --ms 1,4,16,64,256,1024 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --registry cuda_hybrid"
timeout 120 $W/s90/w4a16_bench_gpu $ARGS --csv $W/out/sm90.csv > $W/out/sm90.txt 2>&1; echo "sm90 rc=$? t=$(($(date +%s)-T0))"
timeout 150 $W/s80/w4a16_bench_gpu $ARGS --csv $W/out/sm80.csv > $W/out/sm80.txt 2>&1; echo "sm80 rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/ab_compare.py $W/out/sm90.csv $W/out/sm80.csv > $W/out/sm90_vs_sm80.md
head -70 $W/out/sm90_vs_sm80.md
tar -czf $OUT/call4.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
