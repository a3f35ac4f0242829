#!/usr/bin/env bash
# Stop 43, call 3 (H200): call 1's binaries (.carry-s43/c1.tar.xz, branch stream-imma; their GPU tests ran in call 1 on an
# H100), no tests. Which kernel and math at 1..8 tokens: interleaved rounds of whole processes, W4A16_DECODE_IMMA=0 at the
# default plans (main's), the bulk kernel forced with its fp16 / bf16 math (W4A16_DECODE_BULK=1, IMMA=0), forced with
# the integer math converted by its own blocks (IMMA=2: no extra launch), and the default plans with IMMA=2; 8 PERF.md
# layers x M = 1, 2, 3, 4, 6, 8 x fp16 / bf16 uint4b8 g = 128, every row against f64.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; OUT=/tmp/s43c3_out; mkdir -p $OUT; trap 'tar -czf $R/call3.tar.gz -C $OUT .' EXIT
W=/tmp/s43c3; mkdir -p $W && tar -xJf .carry-s43/c1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down
for r in $(seq 1 ${ROUNDS:-3}); do
  for v in off bulk0 bulk2 own; do
    [ $(($(date +%s)-T0)) -gt ${BUDGET_S:-400} ] && { echo "skipped $v round $r"; continue; }
    case $v in
      off) env=(W4A16_DECODE_IMMA=0) ;; own) env=(W4A16_DECODE_IMMA=2) ;;
      bulk0) env=(W4A16_DECODE_IMMA=0 W4A16_DECODE_BULK=1) ;; bulk2) env=(W4A16_DECODE_IMMA=2 W4A16_DECODE_BULK=1) ;;
    esac
    env "${env[@]}" timeout 120 $W/c1/w4a16_bench_gpu --shapes $SH --ms ${MS:-1,2,3,4,6,8} --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups \
      --no-cublas --decode-max-m 8 --csv $OUT/ab_${v}_$r.csv > $OUT/ab_${v}_$r.log 2>&1 || echo "$v round $r rc=$?"
    echo "round $r $v t=$(($(date +%s)-T0))"
  done
done
files() { ls $OUT/ab_$1_*.csv 2>/dev/null | paste -sd, -; }
for f in bulk0 bulk2 own; do [ -n "$(files $f)" ] && python3 bench/gpu/ab_compare.py $(files off) $(files $f) > $OUT/ab_$f.md 2>&1; done
[ -n "$(files bulk2)" ] && python3 bench/gpu/ab_compare.py $(files bulk0) $(files bulk2) > $OUT/ab_bulk0_bulk2.md 2>&1
for f in bulk0 bulk2 own bulk0_bulk2; do
  [ -f $OUT/ab_$f.md ] || continue
  echo "== $f: $(grep -E 'rows;' $OUT/ab_$f.md); rows not ok: $(grep -c '| NO |' $OUT/ab_$f.md)"
  grep "cuda_decode" $OUT/ab_$f.md | awk -F'|' '{printf "%-17s %-9s M=%-2s %8s %8s %s\n", $3, $4, $7, $8, $9, $10}'
done
echo "done t=$(($(date +%s)-T0))"
