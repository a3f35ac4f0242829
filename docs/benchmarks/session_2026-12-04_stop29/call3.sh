#!/usr/bin/env bash
# Session 2026-12-04 stop 29, call 3: three builds of the bulk kernel (decode_bulk.cu; decode.cu identical in all: the
# default at 1..2 tokens, kItemTiles 48 / 64 KB): v1 = call 2's kernel (one consumer barrier per item, release after the
# math), v3 = stripe-group barriers + warps_k = 1 stores from registers + the stage released before the math, v4 = v3
# with the release after the math. 1. v3's bulk GPU tests + odd shapes; 2. for each build: the automatic bulk plan
# (W4A16_DECODE_BULK=1) and all 8 forced plans on 8 PERF.md shapes x M = 1, 2, 4, 8, fp16 uint4b8 g128, and the
# streaming kernel (W4A16_DECODE_BULK=0) twice, every row against f64. One tarball back.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s29c3; mkdir -p $W/bin $W/csv && tar -xJf .carry-s29/bins3.tar.xz -C $W/bin
timeout 150 $W/bin/test_v3 --gtest_filter='Decode.Bulk*:Decode.OddShapes*' --gtest_brief=1 > $W/csv/test_v3.log 2>&1; echo "test v3 rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $W/csv/test_v3.log | head
ARGS=(--shapes 8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
      --ms 1,2,4,8 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
W4A16_DECODE_BULK=0 timeout 60 $W/bin/bench_v1 "${ARGS[@]}" --csv $W/csv/old_1.csv > /dev/null 2>&1; echo "old rc=$?"
for r in 1 2; do for v in v1 v3 v4; do
  W4A16_DECODE_BULK=1 timeout 60 $W/bin/bench_$v "${ARGS[@]}" --csv $W/csv/${v}_auto_$r.csv > /dev/null 2>&1; echo "$v auto r$r rc=$? t=$(($(date +%s)-T0))"
done; done
for v in v1 v3 v4; do for p in 1,1 2,1 4,1 8,1 1,2 2,2 4,2 8,2; do
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_PLAN=$p timeout 60 $W/bin/bench_$v "${ARGS[@]}" --csv $W/csv/${v}_${p/,/_}.csv > /dev/null 2>&1
done; echo "$v plans t=$(($(date +%s)-T0))"; done
W4A16_DECODE_BULK=0 timeout 60 $W/bin/bench_v1 "${ARGS[@]}" --csv $W/csv/old_2.csv > /dev/null 2>&1; echo "old rc=$?"
tar -czf $OUT/call3.tar.gz -C $W/csv .
echo "total $(($(date +%s)-T0)) s"
