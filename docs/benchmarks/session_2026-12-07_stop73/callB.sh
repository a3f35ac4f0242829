#!/usr/bin/env bash
# Stop 73 call B (carries .carry-l73b: branch bulk-xtma b3aa61f's w4a16_bench_gpu + w4a16_test_gpu_decode, main's
# w4a16_bench_gpu (_main: stop 72's build, the decode code of main since), and a timing probe of main
# (w4a16_bench_gpu_px: probe_xs_streaming.patch, the streaming kernel copying no x), stripped, xz -9;
# .carry-l71e for callN on an H200).
# The streamed x of the bulk kernel as one TMA box per stage against main's one copy per token row. Any card:
#  0. smoke: one forced row (llama8b.down M = 16), 30 s bound (a wrong transaction count hangs); stops on failure
#  1. the streamed-x bulk test (Decode.BulkStreamedX: every configuration at M = 1..16, forced plans over persistent
#     items with partial last stages, chained layers, 16 tokens of K = 14336 twice bit-equal)
#  2. A/B, 2 interleaved rounds, main (O) against the branch (N), every row against f64:
#     F: the bulk kernel with x streamed forced, the 10 PERF.md shapes x M = 8 / 12 / 16 x fp16 x uint4b8 / uint4
#     D: the default plans (where x is streamed by default: 4..8 tokens on layers <= 32 MB (H100) / 8 MB (H200), and
#        llama8b.down uint4 9..16 on the H100), 7 shapes x M = 4 / 8 / 12 / 16 x fp16 x uint4b8 / uint4
#     P: main against the probe on D's plans at M = 12 / 16 (what the streaming kernel's x copies cost it; the probe's
#        rows fail the f64 check by design)
#     G: the same forced, llama8b.down uint4 g = 32 at M = 9 / 12 / 16 (one round)
#  3. on an H200 with time left: issue 5's rows (stop 63 callN, STEPS="mid large"), tarred into n.tar.gz.
# At most 8 files come back: gpu.txt, smoke.log, test.log, ab.md, r.tar.gz (n.tar.gz).
set -u
. scripts/lib/device-env.sh
S=/tmp/s73b; rm -rf $S; mkdir -p $S/o $S/n $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l73b/b.tar.xz -C $S/n && mv $S/n/w4a16_bench_gpu_main $S/o/w4a16_bench_gpu && mv $S/n/w4a16_bench_gpu_px $S/p.bench
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
XS="W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1"
env $XS timeout 30 $S/n/w4a16_bench_gpu --shapes llama8b.down --ms 16 --dtypes f16 --scalars uint4b8 --no-extra-groups \
  --no-cublas --decode-max-m 16 > $OUT/smoke.log 2>&1
rc=$?; log "smoke rc=$rc"; tail -3 $OUT/smoke.log
if [ $rc -ne 0 ]; then
  timeout 120 $S/n/w4a16_test_gpu_decode --gtest_filter='Decode.BulkStreamedX' > $OUT/test.log 2>&1; log "test rc=$?"
  tail -30 $OUT/test.log; exit 0
fi
timeout 90 $S/n/w4a16_test_gpu_decode --gtest_filter='Decode.BulkStreamedX' > $OUT/test.log 2>&1; log "bulk test rc=$?"
grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" $OUT/test.log | head -20
ALL=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
DEF=llama8b.o,llama8b.down,llama8b.qkv,8192x8192,qwen0.5b.down,qwen0.5b.gate_up,qwen0.5b.qkv
COMMON="--dtypes f16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  for side in o n; do
    env $XS timeout 90 $S/$side/w4a16_bench_gpu --shapes $ALL --ms 8,12,16 $COMMON --csv $S/r/F_${side}_$r.csv > $S/r/F_${side}_$r.log 2>&1
    log "F $side $r rc=$?"
    timeout 90 $S/$side/w4a16_bench_gpu --shapes $DEF --ms 4,8,12,16 $COMMON --csv $S/r/D_${side}_$r.csv > $S/r/D_${side}_$r.log 2>&1
    log "D $side $r rc=$?"
  done
  timeout 60 $S/p.bench --shapes $DEF --ms 12,16 $COMMON --csv $S/r/P_p_$r.csv > $S/r/P_p_$r.log 2>&1; log "P $r rc=$?"
done
for side in o n; do  # G: llama8b.down uint4 at g = 32 (the bulk rule leaves it out at 9..16; the streaming kernel: 28 us)
  env $XS timeout 60 $S/$side/w4a16_bench_gpu --shapes llama8b.down --ms 9,12,16 --dtypes f16 --scalars uint4 --groups 32 \
    --no-extra-groups --no-cublas --decode-max-m 16 --csv $S/r/G_${side}_1.csv > $S/r/G_${side}_1.log 2>&1
  log "G $side rc=$?"
done
for set in F D G; do
  echo "### $set: old = main (one copy per token row), new = one TMA box per stage" >> $OUT/ab.md
  python3 bench/gpu/ab_compare.py $(ls $S/r/${set}_o_*.csv | paste -sd,) $(ls $S/r/${set}_n_*.csv | paste -sd,) >> $OUT/ab.md 2>&1
done
echo "### P: old = main's default plans, new = the probe copying no x in the streaming kernel (M = 4 / 8 rows: old only)" >> $OUT/ab.md
python3 bench/gpu/ab_compare.py $(ls $S/r/D_o_*.csv | paste -sd,) $(ls $S/r/P_p_*.csv | paste -sd,) >> $OUT/ab.md 2>&1
grep -E "^###|rows; old/new" $OUT/ab.md
tar -czf $OUT/r.tar.gz -C $S r
if grep -q H200 $OUT/gpu.txt && [ $SECONDS -lt 250 ]; then
  mkdir -p $S/nn
  OUT=$S/nn STEPS="mid large" CARRY=.carry-l71e bash docs/benchmarks/session_2026-12-06_stop63/callN.sh > $S/nn/n.txt 2>&1
  log "callN rc=$?"; tar -czf $OUT/n.tar.gz -C $S/nn .
fi
