#!/usr/bin/env bash
# stop 23 call 6: the refitted split terms + the table regenerated from calls 1 and 5 (new) against main 012b9ff
# (old: the constants of 2026-12-03 01:53 UTC + call 1's table), prefill_dq_ab bench interleaved, fp16 uint4b8 g128,
# cuBLAS fp16 in the same processes, nine shapes x 14 token counts; then every prefill GPU test of the new build.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/r2; mkdir -p $W/ab; tar -xJf .carry-refit2/bins.tar.xz -C $W
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192
MS=8,16,24,32,64,100,128,200,256,512,1000,1024,2048,4096
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  if [ $r = 3 ] && [ $(($(date +%s)-T0)) -gt 150 ]; then echo "round 3 skipped"; break; fi
  for b in $pair; do
    timeout 90 $W/$b/prefill_dq_ab bench $W/ab/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab > $OUT/call6_refit_ab.txt 2>&1
tail -3 $OUT/call6_refit_ab.txt
timeout 100 $W/new/prefill_gpu_test --gtest_brief=1 > $OUT/call6_prefill_gpu_test.log 2>&1; echo "prefill_gpu_test rc=$? t=$(($(date +%s)-T0))"
grep -E "^\[  (PASSED|FAILED)|tests ran|Failure" $OUT/call6_prefill_gpu_test.log | head
tar -czf $OUT/call6_data.tar.gz -C $W ab
