#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 2: every forced bulk plan (W4A16_DECODE_BULK_PLAN = warps_n,blocks_per_sm over 1,2,4,8 x
# 1,2; where one does not fit the row's plan column shows the automatic one) against the streaming kernel
# (W4A16_DECODE_BULK=0) on 8 PERF.md shapes x M = 1, 2, 4, 8, 16, fp16 uint4b8 g128, 2 rounds interleaved, every row
# checked against f64. Then the bulk GPU tests again (the knob fix). Run twice: the first run's 35 files exceeded the
# device's 8 returned files; the second (W4A16_SKIP_TESTS=1) returned one tarball.
T0=$(date +%s)
. scripts/lib/device-env.sh
mkdir -p .gpu/bin && tar -xJf .carry-s29/bins2.tar.xz -C .gpu/bin
B=.gpu/bin/w4a16_bench_gpu; W=/tmp/sweep; mkdir -p $W
ARGS=(--shapes 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
      --ms 1,2,4,8,16 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=0 timeout 60 $B "${ARGS[@]}" --csv $W/old_$r.csv > $W/old_$r.log 2>&1; echo "old r$r rc=$?"
  for p in 1,1 2,1 4,1 8,1 1,2 2,2 4,2 8,2; do
    W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_PLAN=$p timeout 60 $B "${ARGS[@]}" --csv $W/bulk_${p/,/_}_$r.csv > $W/bulk_${p/,/_}_$r.log 2>&1; echo "bulk $p r$r rc=$? t=$(($(date +%s)-T0))"
  done
done
tar -czf $OUT/call2_sweep.tar.gz -C $W .  # one file: the device returns at most 8
[ -n "${W4A16_SKIP_TESTS:-}" ] || { timeout 150 .gpu/bin/w4a16_test_gpu_decode --gtest_filter='Decode.Bulk*' --gtest_brief=1 > $OUT/call2_bulk_test.log 2>&1; echo "bulk test rc=$? t=$(($(date +%s)-T0))"; }
echo "total $(($(date +%s)-T0)) s"
