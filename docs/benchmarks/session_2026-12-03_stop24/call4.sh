#!/usr/bin/env bash
# Call 4: where the 2-CTA bm128_bn128 entries lose just past a multiple of 64 tokens (call 3: 8192x8192 / llama8b.qkv
# M = 65, llama8b.o M = 129): both binaries of call 3 at the token counts between, 2 interleaved rounds; then the
# registry hybrid sweep bf16 uint4b8 of the new build (every row against f64).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W/ab
tar -xJf .carry-bn256/bins3.tar.xz -C $W
for pair in "old new" "new old"; do
  for b in $pair; do
    timeout 60 $W/$b/prefill_dq_ab bench $W/ab/p1_${b}.csv 8192x8192:8192:8192,llama8b.qkv:6144:4096 65,66,68,72,80,88,96,97,100,112,120,128 uint4b8 > /dev/null 2>&1
    timeout 60 $W/$b/prefill_dq_ab bench $W/ab/p2_${b}.csv llama8b.o:4096:4096 129,130,136,144,160,176,192,193,200,224,256 uint4b8 > /dev/null 2>&1
    cat $W/ab/p1_${b}.csv $W/ab/p2_${b}.csv >> $OUT/call4_probe_${b}.csv
    echo "probe $b t=$(($(date +%s)-T0))"
  done
done
timeout 100 $W/new/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,2,4,8,16,32,64,128,256,1024,4096 \
  --dtypes bf16 --scalars uint4b8 --csv $OUT/call4_hybrid_bf16_sym.csv > $W/hyb.log 2>&1; echo "hybrid bf16 rc=$? t=$(($(date +%s)-T0))"
python3 bench/gpu/hybrid_report.py $OUT/call4_hybrid_bf16_sym.csv --markdown > $OUT/call4_hybrid_bf16_report.md 2>&1
sed -n '1,/^$/p' $OUT/call4_hybrid_bf16_report.md
echo "total $(($(date +%s)-T0)) s"
