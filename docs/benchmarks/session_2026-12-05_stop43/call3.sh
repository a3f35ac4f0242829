#!/usr/bin/env bash
# For the next H200 (not run in stop 43): the bulk kernel forced at 1..8 tokens (W4A16_DECODE_BULK=1) against the
# default plans (the streaming kernel's split plans on most layers from 2..4 tokens), interleaved rounds of whole
# processes, 8 PERF.md layers x M = 1, 2, 3, 4, 6, 8 x fp16 / bf16 uint4b8 g = 128, every row against f64: on the H100
# (stop 43 call 1) the bulk kernel ran 1.04-1.17x the defaults on 8192x8192, llama8b.o / down / qkv at some of these M,
# where stop 31 measured the streaming kernel faster on the H200. Binary: main's `w4a16_bench_gpu` in
# .carry-s43/c3.tar.xz (`mkdir -p .carry-s43/c3 && cp build/bench/gpu/w4a16_bench_gpu .carry-s43/c3/ && strip
# .carry-s43/c3/* && (cd .carry-s43 && tar -cJf c3.tar.xz c3 && rm -rf c3)`). ROUNDS (default 3), BUDGET_S (400).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; OUT=/tmp/s43c3_out; mkdir -p $OUT; trap 'tar -czf $R/call3.tar.gz -C $OUT .' EXIT
W=/tmp/s43c3; mkdir -p $W && tar -xJf .carry-s43/c3.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
for r in $(seq 1 ${ROUNDS:-3}); do
  for v in off bulk; do
    [ $(($(date +%s)-T0)) -gt ${BUDGET_S:-400} ] && { echo "skipped $v round $r"; continue; }
    env=(W4A16_DECODE_BULK=); [ $v = bulk ] && env=(W4A16_DECODE_BULK=1)
    env "${env[@]}" timeout 120 $W/c3/w4a16_bench_gpu --shapes $SH --ms ${MS:-1,2,3,4,6,8} --dtypes f16,bf16 --scalars uint4b8 \
      --no-extra-groups --no-cublas --decode-max-m 8 --csv $OUT/ab_${v}_$r.csv > $OUT/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
files() { ls $OUT/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
python3 bench/gpu/ab_compare.py $(files off) $(files bulk) > $OUT/ab_bulk.md 2>&1
echo "== default -> bulk: $(grep -E 'rows;' $OUT/ab_bulk.md); rows not ok: $(grep -c '| NO |' $OUT/ab_bulk.md)"
grep "cuda_decode" $OUT/ab_bulk.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
echo "done t=$(($(date +%s)-T0))"
