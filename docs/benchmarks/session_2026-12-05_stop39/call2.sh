#!/usr/bin/env bash
# Stop 39, call 2: candidate C, the streaming decode kernel's tile-pair variant for fp16 uint4b8 (g >= 128 or channelwise,
# even tile ranges) with two accumulator chains per partial, as the bulk kernel (stop 38) and the MoE ring have: half the
# scale copies and FFMAs (ptxas: the 9..16-token kernel 112 -> 101 registers, no spills). Branch stream-b8-pairs; carry
# .carry-s38 (base: main 89f8ea1, decode kernels identical to main's) and .carry-s39 (new1.tar.xz: new/w4a16_bench_gpu,
# new/w4a16_test_gpu_decode). The new build's decode GPU tests, then whole processes, 3 interleaved rounds, fp16 uint4b8
# g = 128, fp16 and bf16 (candidate E: bf16 uint4b8 pairs too, 100 / 124 registers) at M = 4, 8, 12, 16 on 6 layers (rows where the bulk / small kernel runs are controls), and base with
# W4A16_DECODE_XSTREAM=0 (x staged where it fits; fp16, M = 12 / 16) as a third column for the M = 9..16 staging question of call 1.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s39c2; mkdir -p $W/out $W/base && tar -xJf .carry-s39/new1.tar.xz -C $W && tar -xJf .carry-s38/bins.tar.xz -C $W/base
cp $W/base/bin/w4a16_bench_gpu $W/base/ 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/new/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1
echo "tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure|SKIPPED' $W/out/test_decode.log | head -12
SH=8192x8192,llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down,qwen0.5b.gate_up
for r in 1 2 3; do
  for v in base new xs0; do
    b=$W/$v/w4a16_bench_gpu; env=(); ms=4,8,12,16; dt=f16,bf16
    [ $v = xs0 ] && { b=$W/base/w4a16_bench_gpu; env=(W4A16_DECODE_XSTREAM=0); ms=12,16; dt=f16; }
    env "${env[@]}" timeout 150 $b --shapes $SH --ms $ms --dtypes $dt --scalars uint4b8 --no-extra-groups --no-cublas \
      --decode-max-m 16 --csv $W/out/dec_${v}_$r.csv > /dev/null 2>$W/out/err_${v}_$r.log || echo "$v round $r rc=$?"
  done
  echo "round $r t=$(($(date +%s)-T0))"
done
for v in new xs0; do
  python3 bench/gpu/ab_compare.py $W/out/dec_base_1.csv,$W/out/dec_base_2.csv,$W/out/dec_base_3.csv \
    $W/out/dec_${v}_1.csv,$W/out/dec_${v}_2.csv,$W/out/dec_${v}_3.csv > $W/out/ab_$v.md 2>&1
  echo "== base -> $v: $(grep -E 'rows;' $W/out/ab_$v.md); rows not ok: $(grep -c '| NO |' $W/out/ab_$v.md)"
  grep "cuda_decode" $W/out/ab_$v.md | awk -F'|' '{printf "%-17s %-9s %-8s M=%-2s %8s %8s %s\n", $3, $4, $5, $7, $8, $9, $10}'
done
tar -czf $OUT/call2.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
