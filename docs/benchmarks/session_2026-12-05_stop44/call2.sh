#!/usr/bin/env bash
# Stop 44, call 2: bulk_by_default on H100-class memory (peak DRAM bandwidth below 4 TB/s: up to 6 tokens where x <= 128
# KB on layers <= 32 MB; decode.md version 22). The new build's decode GPU tests (Decode.DeviceDramBandwidthIsRead prints
# the bandwidth the plan reads), then main's default plans (old: .carry-s44/c4.tar.xz's w4a16_bench_gpu, main 3734cb5's
# decode) against the new build's (new: .carry-s44/c2.tar.xz), whole processes, ROUNDS (3) interleaved rounds, 8 PERF.md
# layers x M = 1, 2, 3, 4, 6, 8 x fp16 / bf16 uint4b8 g = 128, every row against f64. On an H200 (>= 4 TB/s) the two
# builds plan the same: the rows then compare equal plans.
# c2.tar.xz: `mkdir -p /tmp/c2p/c2 && cp build/tests/gpu/decode/w4a16_test_gpu_decode build/bench/gpu/w4a16_bench_gpu
# /tmp/c2p/c2/ && strip /tmp/c2p/c2/* && tar -cJf .carry-s44/c2.tar.xz -C /tmp/c2p c2`. One archive: $OUT/call2.tar.gz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s44c2_out; mkdir -p $O; trap 'tar -czf $R/call2.tar.gz -C $O .' EXIT
W=/tmp/s44c2; mkdir -p $W && for f in c2 c4; do tar -xJf .carry-s44/$f.tar.xz -C $W; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.max.memory --format=csv,noheader | tee $O/gpu.txt
timeout ${TEST_S:-150} $W/c2/w4a16_test_gpu_decode --gtest_brief=1 > $O/test_decode.log 2>&1
echo "decode tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is|decode device' $O/test_decode.log | head -12
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
for r in $(seq 1 ${ROUNDS:-3}); do
  for v in old new; do
    b=$W/c4/w4a16_bench_gpu; [ $v = new ] && b=$W/c2/w4a16_bench_gpu
    timeout 120 $b --shapes $SH --ms 1,2,3,4,6,8 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 8 --csv $O/ab_${v}_$r.csv > $O/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
files() { ls $O/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
python3 bench/gpu/ab_compare.py $(files old) $(files new) > $O/ab_default.md 2>&1
echo "== old -> new default: $(grep -E 'rows;' $O/ab_default.md); rows not ok: $(grep -c '| NO |' $O/ab_default.md)"
grep "cuda_decode" $O/ab_default.md | awk -F'|' '$10+0 > 1.02 || $10+0 < 0.98 {printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
echo "done t=$(($(date +%s)-T0))"
