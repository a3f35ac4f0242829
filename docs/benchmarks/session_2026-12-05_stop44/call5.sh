#!/usr/bin/env bash
# Stop 44, call 5: the bulk kernel with streamed x as the default on H100-class memory at 4..8 tokens (layers <= 32 MB;
# bulk_xstream_by_default). The new build's decode and registry GPU tests, then the previous default (old: call 2's
# build, .carry-s44/c2.tar.xz) against the new (.carry-s44/c6.tar.xz), whole processes, ROUNDS (2) interleaved rounds,
# the 10 PERF.md layers x M = 1, 2, 4, 5, 6, 7, 8 x fp16 / bf16 uint4b8 g = 128, every row against f64.
# c6.tar.xz: w4a16_test_gpu_decode, w4a16_bench_gpu, w4a16_test_gpu_registry of this build, stripped, in c6/.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s44c5_out; mkdir -p $O; trap 'tar -czf $R/call5.tar.gz -C $O .' EXIT
W=/tmp/s44c5; mkdir -p $W && for f in c2 c6; do tar -xJf .carry-s44/$f.tar.xz -C $W; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
timeout 150 $W/c6/w4a16_test_gpu_registry --gtest_brief=1 > $O/test_registry.log 2>&1 &
timeout ${TEST_S:-200} $W/c6/w4a16_test_gpu_decode --gtest_brief=1 > $O/test_decode.log 2>&1
echo "decode tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is' $O/test_decode.log | head -16
wait; grep -E '^\[  (PASSED|FAILED)|Failure' $O/test_registry.log | head -6
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in old new; do
    b=$W/c2/w4a16_bench_gpu; [ $v = new ] && b=$W/c6/w4a16_bench_gpu
    timeout 120 $b --ms 1,2,4,5,6,7,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 8 --csv $O/ab_${v}_$r.csv > $O/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
files() { ls $O/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
python3 bench/gpu/ab_compare.py $(files old) $(files new) > $O/ab_default.md 2>&1
echo "== old -> new default: $(grep -E 'rows;' $O/ab_default.md); rows not ok: $(grep -c '| NO |' $O/ab_default.md)"
grep "cuda_decode" $O/ab_default.md | awk -F'|' '$10+0 > 1.02 || $10+0 < 0.98 {printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
echo "done t=$(($(date +%s)-T0))"
