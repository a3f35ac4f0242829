#!/usr/bin/env bash
# Stop 55 call 1 (carry .carry = scripts/pack-gpu on branch prefill-persist): the persistent bm256 tile loop.
# (1) its own test alone (a hang stops here), (2) every GPU test binary with the persistent loop and the swizzled
# stmatrix epilogue on by default (gpu-check less sweep / peers / MoE / read ceiling; its interleaved M >= 1024 rows
# run the default = persistent plan), (3) the interleaved A/B: the default plan (persistent) against
# W4A16_PREFILL_PERSIST=0 (the plain grid) and cuBLAS fp16, 2 processes, five layers x M = 1024 / 2048 / 4096.
set -u
. scripts/lib/device-env.sh
S=/tmp/s55c1; rm -rf $S .gpu; mkdir -p $S .gpu && tar -xJf .carry/gpu.tar.xz -C .gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
timeout 90 .gpu/bin/prefill_gpu_test --gtest_filter='*PersistentTileLoop*' > $OUT/persist_test.log 2>&1
rc=$?; tail -4 $OUT/persist_test.log; echo "persistent test rc=$rc (${SECONDS}s)" | tee -a $OUT/gpu.txt
[ $rc -eq 0 ] || exit 1
W4A16_TEST_TIMEOUT=240 W4A16_SKIP_SWEEP=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_MOE=1 W4A16_SKIP_READ=1 OUT=$OUT/gc \
  timeout 420 bash scripts/gpu-check > /dev/null 2>&1
echo "gpu-check rc=$? (${SECONDS}s)" | tee -a $OUT/gpu.txt
grep -E "^== (PASS|FAIL)|memcheck|x cuBLAS|rc=" $OUT/gc/gpu-check.log | tee -a $OUT/gpu.txt
for r in 1 2; do
  W4A16_PREFILL_TUNE_SHAPES=${SHAPES:-llama8b.gate_up,llama8b.qkv,8192x8192,llama8b.down,llama70b.gate_up} \
  W4A16_PREFILL_TUNE_MS=${MS:-1024,2048,4096} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
  W4A16_PREFILL_INTERLEAVE=21 W4A16_PREFILL_INTERLEAVE_ENV="W4A16_PREFILL_PERSIST=0" \
    timeout 150 .gpu/bin/prefill_bench $S/ab_r$r.csv tune_tma > $S/ab_r$r.log 2>&1 || echo "rc=$? round $r" | tee -a $OUT/gpu.txt
  echo "round $r (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/ab_r*.csv | tee $OUT/ab_table.txt
tar -czf $OUT/data.tar.gz -C $S .
