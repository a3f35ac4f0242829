#!/usr/bin/env bash
# Stop 45, call 3: the H200's streamed-x default (bulk_xstream_by_default: 4..8 tokens on layers <= 8 MB where the
# peak DRAM bandwidth is >= 4 TB/s). The new build's bulk / model-shape decode GPU tests, then stop 44's final build
# (old, c7) against this one (new, c8): the six layers <= 8 MB plus llama8b.down (unchanged plans) x M = 1, 4, 6, 8 x
# fp16 / bf16 uint4b8 g = 128, 2 interleaved rounds of whole processes, every row against f64.
# c8.tar.xz: `mkdir -p /tmp/c8p/c8 && cp build/tests/gpu/decode/w4a16_test_gpu_decode build/bench/gpu/w4a16_bench_gpu
# /tmp/c8p/c8/ && strip /tmp/c8p/c8/* && tar -cJf .carry-s45/c8.tar.xz -C /tmp/c8p c8`. One archive: $OUT/call3.tar.gz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s45c3_out; mkdir -p $O; trap 'tar -czf $R/call3.tar.gz -C $O .' EXIT
W=/tmp/s45c3; mkdir -p $W && tar -xJf .carry-s44/c7.tar.xz -C $W && tar -xJf .carry-s45/c8.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
timeout ${TEST_S:-120} $W/c8/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='*Bulk*:*ModelShapes*:*DramBandwidth*' > $O/test_decode.log 2>&1
echo "tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|peak DRAM' $O/test_decode.log | head -8
SH=llama8b.o,qwen0.5b.down,qwen0.5b.gate_up,qwen0.5b.qkv,qwen0.5b.o,llama8b.down
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in old new; do
    b=$W/c7/w4a16_bench_gpu; [ $v = new ] && b=$W/c8/w4a16_bench_gpu
    timeout 60 $b --shapes $SH --ms 1,4,6,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 8 \
      --csv $O/ab_${v}_$r.csv > $O/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
  done
done
files() { ls $O/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
python3 bench/gpu/ab_compare.py $(files old) $(files new) > $O/ab_default.md 2>&1
grep -E 'rows;' $O/ab_default.md; grep "cuda_decode" $O/ab_default.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %7s %7s %s\n", $3, $4, $7, $8, $9, $10}'
echo "done t=$(($(date +%s)-T0))"
