#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 7 (main with the 3-token K bound of bulk_by_default): every decode and registry GPU
# test; main against the build before the bound (call 6's binary), both defaults, 5 layers x M = 2..4 x fp16 / bf16, 3
# interleaved rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31c7; mkdir -p $W/out $W/bin && tar -xJf .carry-s31/bins7.tar.xz -C $W/bin
for t in w4a16_test_gpu_decode w4a16_test_gpu_registry; do
  timeout 150 $W/bin/new/$t --gtest_brief=1 > $W/out/$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $W/out/$t.log | head -4
done
ARGS=(--shapes llama8b.down,8192x8192,llama8b.gate_up,llama8b.o,llama8b.qkv --ms 2,3,4 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2 3; do
  timeout 60 $W/bin/old/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/old_$r.csv > /dev/null 2>&1; echo "old r$r rc=$?"
  timeout 60 $W/bin/new/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/new_$r.csv > /dev/null 2>&1; echo "new r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/old_1.csv,$W/out/old_2.csv,$W/out/old_3.csv $W/out/new_1.csv,$W/out/new_2.csv,$W/out/new_3.csv > $W/out/ab.md 2>&1
grep -E "\| 3 \||rows;" $W/out/ab.md
tar -czf $OUT/call7.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
