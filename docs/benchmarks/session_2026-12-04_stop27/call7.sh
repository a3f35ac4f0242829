#!/usr/bin/env bash
# Session 2026-12-04 stop 27, call 7: the cost model over the two table-only tiles as well (W4A16_PREFILL_MODEL_WIDE=1)
# against the four modeled ones (=0), one binary: `prefill_dq_ab plans` under both settings on 18 layer shapes (nine
# PERF.md ones below llama70b, Qwen2.5-7B / 14B and Llama-3-70B layers) x 9 token counts, then prefill_dq_ab bench at
# every point whose default plan differs (scripts/prefill-ab/plans_diff.py, points_ab.sh), 2 interleaved rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s27; mkdir -p $W
tar -xJf .carry-s27/bins7.tar.xz -C $W
B=$W/new/prefill_dq_ab
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,q7b.qkv:4608:3584,q7b.o:3584:3584,q7b.gate_up:37888:3584,q7b.down:3584:18944,q14b.qkv:7168:5120,q14b.o:5120:5120,q14b.gate_up:27648:5120,l70b.qkv:10240:8192,l70b.down:8192:28672
MS=100,200,300,512,768,1024,1536,2048,4096
W4A16_PREFILL_MODEL_WIDE=0 $B plans $SH $MS > /dev/null 2> $OUT/call7_plans_old.log
W4A16_PREFILL_MODEL_WIDE=1 $B plans $SH $MS > /dev/null 2> $OUT/call7_plans_new.log
python3 scripts/prefill-ab/plans_diff.py $OUT/call7_plans_old.log $OUT/call7_plans_new.log | tee $OUT/call7_points.txt
echo "points: $(awk '{n += split($2, a, ",")} END {print n}' $OUT/call7_points.txt) t=$(($(date +%s)-T0))"
timeout 250 bash scripts/prefill-ab/points_ab.sh "env W4A16_PREFILL_MODEL_WIDE=0 $B" "env W4A16_PREFILL_MODEL_WIDE=1 $B" $OUT/call7_points.txt $W/ab 2 \
  > $OUT/call7_ab_progress.txt 2>&1
echo "ab rc=$? t=$(($(date +%s)-T0))"
python3 scripts/prefill-ab/ab_table.py $W/ab | tee $OUT/call7_table_ab.txt
tar -czf $OUT/call7_ab.tar.gz -C $W ab
gzip -9 $OUT/call7_plans_old.log $OUT/call7_plans_new.log
echo "total $(($(date +%s)-T0)) s"
