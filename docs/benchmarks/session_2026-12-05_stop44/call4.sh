#!/usr/bin/env bash
# Stop 44, call 4: the bulk kernel with x streamed per stage (W4A16_DECODE_BULK_XSTREAM=1, built this stop; off by
# default). The new build's decode GPU tests (Decode.BulkStreamedX: every configuration at M = 1..16 with x streamed,
# forced plans over persistent items, chained layers, determinism; and every other decode test), then interleaved
# rounds of whole processes: the default plans (def) against the bulk kernel forced with x streamed (bxs), 8 PERF.md
# layers x M = 1, 4, 8, 9, 12, 16 x fp16 / bf16 uint4b8 g = 128, every row against f64. ROUNDS (2), TEST_S (200).
# c5.tar.xz: `mkdir -p /tmp/c5p/c5 && cp build/tests/gpu/decode/w4a16_test_gpu_decode build/bench/gpu/w4a16_bench_gpu
# /tmp/c5p/c5/ && strip /tmp/c5p/c5/* && tar -cJf .carry-s44/c5.tar.xz -C /tmp/c5p c5`. One archive: $OUT/call4.tar.gz.
# C=c7 runs the final build's (.carry-s44/c7.tar.xz, call6.sh's recipe): on an H200 the A/B that decides whether the
# streamed x should be the default there too (bulk_xstream_by_default is H100-class only).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s44c4_out; mkdir -p $O; trap 'tar -czf $R/call4.tar.gz -C $O .' EXIT
C=${C:-c5}; W=/tmp/s44c4; mkdir -p $W && tar -xJf .carry-s44/$C.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
timeout ${TEST_S:-200} $W/$C/w4a16_test_gpu_decode --gtest_brief=1 > $O/test_decode.log 2>&1
echo "decode tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is|bulk streamed' $O/test_decode.log | head -16
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in def bxs; do
    env=(W4A16_DECODE_BULK=); [ $v = bxs ] && env=(W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1)
    env "${env[@]}" timeout 120 $W/$C/w4a16_bench_gpu --shapes $SH --ms 1,4,8,9,12,16 --dtypes f16,bf16 --scalars uint4b8 \
      --no-extra-groups --no-cublas --decode-max-m 16 --csv $O/ab_${v}_$r.csv > $O/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
files() { ls $O/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
python3 bench/gpu/ab_compare.py $(files def) $(files bxs) > $O/ab_bxs.md 2>&1
echo "== default -> bulk + streamed x: $(grep -E 'rows;' $O/ab_bxs.md); rows not ok: $(grep -c '| NO |' $O/ab_bxs.md)"
grep "cuda_decode" $O/ab_bxs.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
echo "done t=$(($(date +%s)-T0))"
