#!/usr/bin/env bash
# Stop 73 call A: stop 72's prepared callC plus a g = 32 step (3). Stop 72's words: the prepared call for the next
# device (carries .carry-l72p: main 2026-12-07 (stop 72)'s w4a16_bench_gpu and two
# timing-probe builds of it, probe_x.patch with -DW4A16_DECODE_PROBE_X=1 / 2, stripped, xz -9; .carry-l71e: main's
# prefill_bench, for callN on an H200). Any card:
#  1. the x-copy probe: the bulk kernel with x streamed (forced) at M = 8 / 16 on five layers, fp16 uint4b8, main (B8)
#     against probe 1 (no x copied: the stage's x bytes never move) and probe 2 (the same bytes in one copy per stage
#     instead of one per token row), 2 interleaved rounds. The probes compute garbage on purpose (their rows fail the
#     f64 check); only their times count. Probe 1 near B8: the x copies are not what the 9..16-token loop waits on.
#  2. llama8b.down uint4 at M = 8 / 9 / 12 / 16 as the hybrid, the decode path (default and bulk forced) and the prefill
#     path, fp16 / bf16 (on an H100 this checks stop 72's entry; on an H200 it says whether the H200 should take it too).
# On an H200 also issue 5's rows (stop 63's callN, STEPS="mid large") if the time allows.
set -u
. scripts/lib/device-env.sh
S=/tmp/s73a; rm -rf $S; mkdir -p $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l72p/p.tar.xz -C $S
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
ARGS="--shapes 8192x8192,llama8b.gate_up,llama70b.gate_up,llama8b.down,llama8b.qkv --ms 8,16 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16"
XS="W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1"
for r in 1 2; do
  for side in B8 P1 P2; do
    bin=$S/w4a16_bench_gpu; [ $side = P1 ] && bin=$S/w4a16_bench_gpu_p1; [ $side = P2 ] && bin=$S/w4a16_bench_gpu_p2
    env $XS timeout 90 $bin $ARGS --csv $S/r/${side}_$r.csv > $S/r/${side}_$r.log 2>&1
    log "$side $r rc=$?"
  done
done
for side in P1 P2; do
  echo "### old: B8, new: $side (the probe's rel_err / ok columns are garbage by design)" >> $OUT/probe.md
  python3 bench/gpu/ab_compare.py $(ls $S/r/B8_*.csv | paste -sd,) $(ls $S/r/${side}_*.csv | paste -sd,) >> $OUT/probe.md 2>&1
done
grep -E "^###|rows; old/new" $OUT/probe.md
timeout 90 $S/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-cublas --shapes llama8b.down --ms 8,9,12,16 \
  --dtypes f16,bf16 --scalars uint4 --no-extra-groups --csv $OUT/down_default.csv > $OUT/down_default.log 2>&1; log "down default rc=$?"
env $XS timeout 60 $S/w4a16_bench_gpu --no-cublas --shapes llama8b.down --ms 8,9,12,16 --dtypes f16,bf16 --scalars uint4 \
  --no-extra-groups --csv $OUT/down_bulk.csv > $OUT/down_bulk.log 2>&1; log "down bulk rc=$?"
grep -E "llama8b.down" $OUT/down_default.log $OUT/down_bulk.log | awk '{print $1, $2, $4, $5, $6, $8, $9}' | head -40
# 3. (stop 73) llama8b.down uint4 at g = 32, where the decode plan runs the streaming kernel (the bulk rule leaves g = 32
#    out): decode path against prefill path at 8..16, which the hybrid's g = 32 switch point (8 since stop 73) rests on.
timeout 60 $S/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --no-cublas --shapes llama8b.down --ms 8,9,12,16 \
  --dtypes f16,bf16 --scalars uint4 --groups 32 --no-extra-groups --csv $OUT/down_g32.csv > $OUT/down_g32.log 2>&1; log "down g32 rc=$?"
grep -E "llama8b.down" $OUT/down_g32.log | awk '{print $1, $2, $4, $5, $6, $8, $9}' | head -20
tar -czf $OUT/r.tar.gz -C $S r
if grep -q H200 $OUT/gpu.txt && [ $SECONDS -lt 250 ]; then
  mkdir -p $OUT/n
  OUT=$OUT/n STEPS="mid large" CARRY=.carry-l71e bash docs/benchmarks/session_2026-12-06_stop63/callN.sh > $OUT/n.txt 2>&1
  log "callN rc=$?"
fi
