#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 4: the grouped MoE path's GEMM 2 rows in the act dtype (half the bytes of the fp32
# rows; the reduce reads them). 1. MoE GPU tests; 2. the linear prefill outputs bit-identical to main before this
# session (prefill_dq_ab hash); 3. w4a16_bench_moe new / old (call 3's binary) / new at T = 512, 1024, 4096.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins4.tar.xz -C $W
timeout 200 $W/new/w4a16_test_gpu_moe --gtest_brief=1 > $OUT/call4_moe_test.log 2>&1; echo "moe test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure|Expected|Which is" $OUT/call4_moe_test.log | head -20
export W4A16_SEED=20261204
timeout 60 $W/old/prefill_dq_ab hash > $W/hash_old.log 2>&1; echo "hash old rc=$?"
timeout 60 $W/new/prefill_dq_ab hash > $W/hash_new.log 2>&1; echo "hash new rc=$?"
unset W4A16_SEED
grep '^hash ' $W/hash_old.log > $W/h_old.txt; grep '^hash ' $W/hash_new.log > $W/h_new.txt
echo "hash lines old $(wc -l < $W/h_old.txt) new $(wc -l < $W/h_new.txt) differing $(diff $W/h_old.txt $W/h_new.txt | grep -c '^[<>]')"
for r in new_r1 old new_r2; do
  b=${r%_r*}
  timeout 100 $W/$b/w4a16_bench_moe $OUT/call4_$r.csv 512,1024,4096 > /dev/null 2>&1; echo "$r rc=$?"
done
for f in call4_new_r1 call4_old call4_new_r2; do echo "== $f"; grep -E "chosen|align_only" $OUT/$f.csv; done
gzip -9 $OUT/call4_moe_test.log
echo "total $(($(date +%s)-T0)) s"
