#!/usr/bin/env bash
# Session 2026-12-04 call 3: the 192 x 192 tile as a table-only planned tile (ONE_GROUP twin 28) with entries at
# M = 129..192 (llama8b.o to 175). Every prefill GPU test + the registry GPU test; prefill_dq_ab of main before
# this session (old, 08b26fd) against this tree (new), 3 interleaved rounds; the registry hybrid sweep fp16 uint4b8.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s25; mkdir -p $W
tar -xJf .carry-s25/bins3.tar.xz -C $W
for t in prefill_gpu_test w4a16_test_gpu_registry; do
  timeout 150 $W/new/$t --gtest_brief=1 > $OUT/call3_$t.log 2>&1; echo "$t rc=$? t=$(($(date +%s)-T0))"
  grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED" $OUT/call3_$t.log | head
done
gzip -9 $OUT/call3_prefill_gpu_test.log
SH=llama8b.o:4096:4096,llama8b.down:4096:14336,llama8b.qkv:6144:4096,llama70b.gate_up:57344:8192,8192x8192:8192:8192,llama8b.gate_up:28672:4096
MS=65,72,129,136,160,175,192
mkdir -p $W/ab3
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    timeout 90 $W/$b/prefill_dq_ab bench $W/ab3/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab3/log_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab3 > $OUT/call3_table_ab.txt 2>&1
cat $OUT/call3_table_ab.txt
tar -czf $OUT/call3_ab.tar.gz -C $W ab3
timeout 100 $W/new/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,2,4,8,16,32,64,128,256,1024,4096 \
  --dtypes f16 --scalars uint4b8 --csv $OUT/call3_hybrid_f16_sym.csv > /dev/null 2>&1; echo "registry rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/hybrid_report.py $OUT/call3_hybrid_f16_sym.csv --markdown > $OUT/call3_hybrid_f16_sym_report.md 2>&1
sed -n '1,/^$/p' $OUT/call3_hybrid_f16_sym_report.md
gzip -9 $OUT/call3_hybrid_f16_sym.csv
echo "total $(($(date +%s)-T0)) s"
