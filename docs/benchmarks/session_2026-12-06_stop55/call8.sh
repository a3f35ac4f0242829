#!/usr/bin/env bash
# Stop 55 call 8 (carry .carry-s55g: the registry / MoE / decode GPU test binaries, the CLI and its GPU test, prefill_bench
# of branch prefill-tma-store): the suites that reach prefill_run (the hybrid at large M, the CLI) with the TMA store on,
# then the interleaved standing of the layers call 7 left out (llama8b.qkv / down, llama70b.gate_up at M = 1024 / 4096,
# one process, shuffled). The last of the session's device budget: every part under a short timeout.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c8; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s55g/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
export W4A16_CLI=$S/b/w4a16
pids=()
for t in w4a16_test_gpu_registry w4a16_test_gpu_moe w4a16_test_gpu_decode w4a16_test_cli_gpu; do
  timeout 90 $S/b/$t --gtest_brief=1 > $OUT/$t.log 2>&1 & pids+=($!)
done
i=0; for t in w4a16_test_gpu_registry w4a16_test_gpu_moe w4a16_test_gpu_decode w4a16_test_cli_gpu; do
  wait ${pids[$i]}; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/$t.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt; i=$((i+1))
done
echo "tests done (${SECONDS}s)" | tee -a $OUT/gpu.txt
W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama8b.down,llama70b.gate_up W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 \
W4A16_PREFILL_TUNE_SPLITS=1 W4A16_PREFILL_INTERLEAVE=24 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_TMA_STORE=0" \
  timeout 75 $S/b/prefill_bench $S/ab_r1.csv tune_tma > $S/ab_r1.log 2>&1 || echo "bench rc=$?" | tee -a $OUT/gpu.txt
echo "bench done (${SECONDS}s)" | tee -a $OUT/gpu.txt
python3 scripts/prefill-ab/il_table.py $S/ab_r1.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
