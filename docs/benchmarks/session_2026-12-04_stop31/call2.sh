#!/usr/bin/env bash
# Session 2026-12-04 stop 31, call 2: the measured-plan entries of call 1 (the 192 x 128 tile on llama8b.qkv M = 193..256 /
# 385..512 and qwen0.5b.gate_up M = 193..256; llama8b.down M = 101..128 on bm128 occ2 s8 and M = 193..256 on bm256 s4)
# against main before them: `prefill_dq_ab plans` of both builds on 14 layer shapes x 24 token counts, then
# prefill_dq_ab bench at every point whose default plan differs (3 interleaved rounds); and forced token splits
# of llama8b.qkv at M = 1024 (heads of whole 256-token blocks, each part on its default plan) with the new build.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s31; mkdir -p $W
tar -xJf .carry-s31/bins2.tar.xz -C $W
SH=qwen0.5b.qkv:1152:896,qwen0.5b.o:896:896,qwen0.5b.gate_up:9728:896,qwen0.5b.down:896:4864,llama8b.qkv:6144:4096,llama8b.o:4096:4096,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,8192x8192:8192:8192,q7b.qkv:4608:3584,q7b.o:3584:3584,q7b.down:3584:18944,q14b.qkv:7168:5120,l70b.qkv:10240:8192
MS=100,101,120,128,150,193,200,230,256,300,400,450,512,600,768,900,1000,1024,1100,1280,1536,2048,3000,4096
$W/old/prefill_dq_ab plans $SH $MS > /dev/null 2> $OUT/call2_plans_old.log
$W/new/prefill_dq_ab plans $SH $MS > /dev/null 2> $OUT/call2_plans_new.log
python3 scripts/prefill-ab/plans_diff.py $OUT/call2_plans_old.log $OUT/call2_plans_new.log | tee $OUT/call2_points.txt
echo "points: $(awk '{n += split($2, a, ",")} END {print n}' $OUT/call2_points.txt) t=$(($(date +%s)-T0))"
timeout 300 bash scripts/prefill-ab/points_ab.sh "$W/old/prefill_dq_ab" "$W/new/prefill_dq_ab" $OUT/call2_points.txt $W/ab 3 \
  > $OUT/call2_ab_progress.txt 2>&1
echo "ab rc=$? t=$(($(date +%s)-T0))"
python3 scripts/prefill-ab/ab_table.py $W/ab | tee $OUT/call2_table_ab.txt
tar -czf $OUT/call2_ab.tar.gz -C $W ab
timeout 90 $W/new/prefill_dq_ab splits $OUT/call2_qkv_splits.csv llama8b.qkv:6144:4096 1024,1000 > $OUT/call2_qkv_splits.log 2>&1
echo "splits rc=$? t=$(($(date +%s)-T0))"; cut -d, -f1-9 $OUT/call2_qkv_splits.csv | head -20
gzip -9 $OUT/call2_plans_old.log $OUT/call2_plans_new.log
echo "total $(($(date +%s)-T0)) s"
