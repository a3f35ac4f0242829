#!/usr/bin/env bash
# Stop 62 call K (carry .carry-k62 = main after the merge of prefill-bm64-1wg, with the tentative llama70b.gate_up
# M = 33..64 entry on the one-warpgroup 128 x 64 tile 39 at split 2 cluster: prefill_bench, prefill_gpu_test, stripped):
#  1. the twin test with the new tiles allowed (call J's one failure), the plan prints and the cluster / automatic
#     reduce tests;
#  2. llama70b.gate_up M = 40 / 48 / 56 / 64: the default plan (the new entry) against tile 39 and the old entry's bm64
#     (23) at split 2, shuffled interleaved with cuBLAS fp16, 7 rounds, 2 processes. The entry stays if the default plan
#     runs >= 3% ahead of 23 s2 here;
#  3. on an H200 only: stop 61 call H part 5, tune_tma of every tile and split at M = 96 / 128 / 192 / 256 on the
#     layers that ran below cuBLAS fp16 there (llama8b.qkv / o / down, qwen0.5b.gate_up / qkv).
# CARRY names another build of the same binaries (callL.sh: main's final build of stop 62).
set -u
. scripts/lib/device-env.sh
CARRY=${CARRY:-.carry-k62}
S=/tmp/s62k; rm -rf $S; mkdir -p $S/b && tar -xJf $CARRY/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 120 $S/b/prefill_gpu_test --gtest_filter='*EarlyIssueConfigsMatchTheirTwinsBitwise*:*PlanCoversPerfShapes*:*ClusterSplitReduce*:*AutomaticReduce*' > $S/t.log 2>&1
log "prefill_gpu_test (4) rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $S/t.log | tr '\n' ' ')"
grep -h "Failure" -A6 $S/t.log | head -20 | tee -a $OUT/gpu.txt
grep -E "plan +57344x8192|resident clusters wgmma_bm64_bn128_s5_ov_occ3_tma_ei:" $S/t.log | tee -a $OUT/gpu.txt
for i in 1 2; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama70b.gate_up W4A16_PREFILL_TUNE_MS=40,48,56,64 W4A16_PREFILL_TUNE_CONFIGS=23,39 \
    W4A16_PREFILL_TUNE_SPLITS=2 W4A16_PREFILL_INTERLEAVE=7 timeout 60 $S/b/prefill_bench $S/k$i.csv tune_tma > $S/k$i.log 2>&1 || log "rc=$? k$i"
done
python3 scripts/prefill-ab/il_table.py $S/k1.csv $S/k2.csv > $OUT/il_k.txt 2>&1; log "entry A/B"
if grep -q H200 $OUT/gpu.txt; then
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=llama8b.qkv,llama8b.o,llama8b.down,qwen0.5b.gate_up,qwen0.5b.qkv \
    W4A16_PREFILL_TUNE_MS=96,128,192,256 W4A16_PREFILL_INTERLEAVE=7 timeout 220 $S/b/prefill_bench $S/tmid.csv tune_tma > $S/tmid.log 2>&1 || log "rc=$? tmid"
  python3 scripts/prefill-ab/il_table.py $S/tmid.csv > $OUT/il_tmid.txt 2>&1
  log "mid tune"
fi
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
cat $OUT/il_k.txt
[ -f $OUT/il_tmid.txt ] && awk '{print $1,$2,$3,$4,$8,$10}' $OUT/il_tmid.txt | head -120
