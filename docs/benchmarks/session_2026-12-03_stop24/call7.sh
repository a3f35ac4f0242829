#!/usr/bin/env bash
# Call 7: main e30a1b2 (old) against + the call 6 entries (new: llama8b.down / gate_up, llama70b.gate_up at
# M = 65..128 on the 2-CTA bm128_bn128 tile), prefill_dq_ab, 3 interleaved rounds, fp16 uint4b8 g128.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/bn; mkdir -p $W/ab
tar -xJf .carry-bn256/bins7.tar.xz -C $W
SH=llama8b.down:4096:14336,llama8b.gate_up:28672:4096,llama70b.gate_up:57344:8192
MS=64,65,72,80,96,100,128,129
r=0
for pair in "old new" "new old" "old new"; do
  r=$((r+1))
  for b in $pair; do
    timeout 70 $W/$b/prefill_dq_ab bench $W/ab/bench_${b}_$r.csv $SH $MS uint4b8 > $W/ab_${b}_$r.log 2>&1
    echo "ab $b $r rc=$? t=$(($(date +%s)-T0))"
  done
done
python3 scripts/prefill-ab/ab_table.py $W/ab > $OUT/call7_table_ab.txt 2>&1
cat $OUT/call7_table_ab.txt
tar -czf $OUT/call7_ab.tar.gz -C $W ab 2>/dev/null
echo "total $(($(date +%s)-T0)) s"
