#!/usr/bin/env bash
# Stop 44, call 6 (the session's last ~3 device minutes): the bulk kernel's streamed x as a template variant of its own
# (kXs; the staged instantiations SASS-identical to call 2's build, checked on the build machine), so call 5's M = 1..2
# differences (0.90-1.05x: the runtime branch's code in the staged kernels) are gone by construction. Its streamed-x GPU
# test, then call 2's build (old) against this one (new), 2 interleaved rounds, 6 layers x M = 1, 4, 8, fp16 uint4b8.
# c7.tar.xz: this build's w4a16_test_gpu_decode and w4a16_bench_gpu, stripped, in c7/.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s44c6_out; mkdir -p $O; trap 'tar -czf $R/call6.tar.gz -C $O .' EXIT
W=/tmp/s44c6; mkdir -p $W && for f in c2 c7; do tar -xJf .carry-s44/$f.tar.xz -C $W; done
timeout 70 $W/c7/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='*BulkStreamedX*:*BulkModelShapes*' > $O/test_decode.log 2>&1
echo "tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure' $O/test_decode.log | head -6
SH=8192x8192,llama8b.down,llama8b.o,llama8b.qkv,qwen0.5b.down,qwen0.5b.qkv
for r in 1 2; do
  for v in old new; do
    b=$W/c2/w4a16_bench_gpu; [ $v = new ] && b=$W/c7/w4a16_bench_gpu
    timeout 40 $b --shapes $SH --ms 1,4,8 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 8 \
      --csv $O/ab_${v}_$r.csv > $O/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
  done
done
files() { ls $O/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
python3 bench/gpu/ab_compare.py $(files old) $(files new) > $O/ab_default.md 2>&1
grep -E 'rows;' $O/ab_default.md; grep "cuda_decode" $O/ab_default.md | awk -F'|' '{printf "%-14s M=%-2s %7s %7s %s\n", $3, $7, $8, $9, $10}'
echo "done t=$(($(date +%s)-T0))"
