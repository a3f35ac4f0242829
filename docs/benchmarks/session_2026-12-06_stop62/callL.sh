#!/usr/bin/env bash
# Stop 62 call L, for the next device session (carry .carry-l62 = main at the end of stop 62: prefill_bench and
# prefill_gpu_test, stripped; rebuild it from main if main's prefill code moved since):
#  1. the plan test (its print: llama70b.gate_up M = 64 must show wgmma_bm64_bn128_s5_ov_occ3_tma_ei split=2 reduce=cluster,
#     the entry with timed_clusters = 132) and the twin / cluster tests;
#  2. llama70b.gate_up M = 40 / 48 / 56 / 64: the default plan against the bm64 s2 cluster plan it replaced (23 s2) and
#     tile 39 s2, shuffled interleaved with cuBLAS fp16, 7 rounds, 2 processes. Keep the entry where the default plan is
#     the 39 row and ahead of 23 s2 (the H100 in stop 62: 0.966-0.976x); on an H200 revert it if 23 s2 wins there;
#  3. on an H200 only: stop 61 call H part 5 (tune_tma of every tile and split at M = 96 / 128 / 192 / 256 on
#     llama8b.qkv / o / down, qwen0.5b.gate_up / qkv: the layers that ran below cuBLAS fp16 there).
set -u
. scripts/lib/device-env.sh
S=/tmp/s62l; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-l62/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 120 $S/b/prefill_gpu_test --gtest_filter='*EarlyIssueConfigsMatchTheirTwinsBitwise*:*PlanCoversPerfShapes*:*ClusterSplitReduce*' > $S/t.log 2>&1
log "prefill_gpu_test (3) rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/t.log | tr '\n' ' ')"
grep -E "plan +57344x8192|resident clusters wgmma_bm64_bn128_s5_ov_occ3_tma_ei:" $S/t.log | tee -a $OUT/gpu.txt
for i in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=40,48,56,64 W4A16_PREFILL_TUNE_CONFIGS=23,39 \
    W4A16_PREFILL_TUNE_SPLITS=2 W4A16_PREFILL_INTERLEAVE=7 timeout 60 $S/b/prefill_bench $S/l$i.csv tune_tma > $S/l$i.log 2>&1 || log "rc=$? l$i"
done
python3 scripts/prefill-ab/il_table.py $S/l1.csv $S/l2.csv > $OUT/il_l.txt 2>&1; log "entry A/B"
if grep -q H200 $OUT/gpu.txt; then
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama8b.o,llama8b.down,qwen0.5b.gate_up,qwen0.5b.qkv \
    W4A16_PREFILL_TUNE_MS=96,128,192,256 W4A16_PREFILL_INTERLEAVE=7 timeout 220 $S/b/prefill_bench $S/tmid.csv tune_tma > $S/tmid.log 2>&1 || log "rc=$? tmid"
  python3 scripts/prefill-ab/il_table.py $S/tmid.csv > $OUT/il_tmid.txt 2>&1
  log "mid tune"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
cat $OUT/il_l.txt
[ -f $OUT/il_tmid.txt ] && awk '{print $1,$2,$3,$4,$8,$10}' $OUT/il_tmid.txt | head -120
