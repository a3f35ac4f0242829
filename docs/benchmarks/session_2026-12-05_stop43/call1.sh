#!/usr/bin/env bash
# Stop 43, call 1 (stop 42's call 1, widened): branch stream-imma, sm_90a binaries in .carry-s43/c1.tar.xz (the integer
# math of decode_imma.cuh in the bulk kernel since stop 42, and now in the streaming kernel, W4A16_DECODE_IMMA=3: x
# converted by a small kernel into the workspace, staged for a block's K range or streamed per step). Its decode and
# registry GPU tests; then interleaved rounds of whole processes at the default plans: W4A16_DECODE_IMMA=0 (the fp16 /
# bf16 mma path, what main runs), =1 (the bulk kernel's integer math), =3 (both kernels'), =1 with the bulk kernel forced
# (W4A16_DECODE_BULK=1; 2 rounds) and =2 (x converted by every bulk block; 1 round), on 8 PERF.md layers x M = 1, 2, 3, 4,
# 6, 8 x fp16 / bf16 uint4b8 g = 128, every row against f64. Beside the GPU tests: the Python 3.12 package with CUDA
# (.carry-s43/py.tar.xz; main's PyTorch plumbing of stops 42-43): pytest's CUDA cases of test_torch_ops.py / test_moe.py /
# test_linear.py with the integer math on (through the registry's Linear and its workspace); at the end, if time is
# left, stop 41's torch_overhead.py.
T0=$(date +%s)
. scripts/lib/device-env.sh
# Every file into one archive (the device tool brings back at most 8 files from $OUT), also when the call is cut short.
R=$OUT; OUT=/tmp/s43c1_out; mkdir -p $OUT; trap 'tar -czf $R/call1.tar.gz -C $OUT .' EXIT
W=/tmp/s43c1; mkdir -p $W $OUT && tar -xJf .carry-s43/c1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout ${TEST_S:-240} $W/c1/w4a16_test_gpu_decode --gtest_brief=1 > $OUT/test_decode.log 2>&1 &
timeout 240 $W/c1/w4a16_test_gpu_registry --gtest_brief=1 > $OUT/test_registry.log 2>&1 &
if [ -f .carry-s43/py.tar.xz ]; then
  mkdir -p $W/py && tar -xJf .carry-s43/py.tar.xz -C $W/py
  W4A16_DECODE_IMMA=1 PYTHONPATH=$W/py timeout 240 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_ops.py python/tests/test_moe.py \
    python/tests/test_linear.py > $OUT/pytest_gpu.log 2>&1 &
fi
wait
[ -f $OUT/pytest_gpu.log ] && { echo "pytest t=$(($(date +%s)-T0))"; grep -E "FAILED|Error|passed|failed" $OUT/pytest_gpu.log | tail -12; }
for t in decode registry; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure|SKIPPED|Expected|Which is|actual|token' $OUT/test_$t.log | head -24; done
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
for r in $(seq 1 ${ROUNDS:-3}); do  # ROUNDS / BUDGET_S: a shorter call where little device time is left
  for v in off on s3 bulk own; do
    [ $r = 3 ] && [ $v = bulk ] && continue  # bulk: 2 rounds, own: 1
    [ $r != 1 ] && [ $v = own ] && continue
    [ $(($(date +%s)-T0)) -gt ${BUDGET_S:-420} ] && { echo "skipped $v round $r: past ${BUDGET_S:-420} s"; continue; }
    env=(W4A16_DECODE_IMMA=1); [ $v = off ] && env=(W4A16_DECODE_IMMA=0); [ $v = own ] && env=(W4A16_DECODE_IMMA=2)
    [ $v = bulk ] && env=(W4A16_DECODE_IMMA=1 W4A16_DECODE_BULK=1)
    [ $v = s3 ] && env=(W4A16_DECODE_IMMA=3)  # the streaming kernel's integer math too (branch stream-imma)
    env "${env[@]}" timeout 150 $W/c1/w4a16_bench_gpu --shapes $SH --ms ${MS:-1,2,3,4,6,8} --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 8 --csv $OUT/ab_${v}_$r.csv > $OUT/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
files() { ls $OUT/ab_$1_*.csv 2>/dev/null | paste -sd, -; }  # the rounds that ran
for f in on s3 own bulk; do [ -n "$(files $f)" ] && python3 bench/gpu/ab_compare.py $(files off) $(files $f) > $OUT/ab_$f.md 2>&1; done
[ -n "$(files s3)" ] && python3 bench/gpu/ab_compare.py $(files on) $(files s3) > $OUT/ab_on_s3.md 2>&1
for f in on s3 own bulk on_s3; do
  [ -f $OUT/ab_$f.md ] || continue
  echo "== ${f/_/ -> } (off -> $f where one name): $(grep -E 'rows;' $OUT/ab_$f.md); rows not ok: $(grep -c '| NO |' $OUT/ab_$f.md)"
  grep "cuda_decode" $OUT/ab_$f.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
done
echo "benches done t=$(($(date +%s)-T0))"
if [ -d $W/py ] && [ $(($(date +%s)-T0)) -lt ${BUDGET_S:-420} ]; then
  PYTHONPATH=$W/py timeout 90 python3 docs/benchmarks/session_2026-12-05_stop41/torch_overhead.py > $OUT/torch_overhead.txt 2>&1
  cat $OUT/torch_overhead.txt | tail -12
fi
echo "done t=$(($(date +%s)-T0))"
