#!/usr/bin/env bash
# Stop 74 call 4 (carry .carry-l74b: main at 4d3c411 (the one-round rule, the H100 hybrid columns, 4..8 tokens on every layer): w4a16_bench_gpu (N),
# w4a16_test_gpu_decode; call 2's build as w4a16_bench_gpu_c2 (C)). Any card.
#  1. decode tests: every configuration at M = 1..16 (the default plans), the streamed bulk kernel's
#  2. the default plans C against N on the layers the one-round rule moves (llama8b.o) or must not, and the gate_up layers
#     (x streamed at 4..8 tokens now on H100-class memory),
#     M = 4 / 6 / 8, fp16, uint4b8 / uint4, 2 interleaved rounds
#  3. the hybrid against both paths through the registry at M = 8 / 9 / 12 / 16 on the layers whose H100 column moved,
#     fp16 / bf16 x uint4b8 / uint4
set -u
. scripts/lib/device-env.sh
S=/tmp/s74d; rm -rf $S; mkdir -p $S/b $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l74b/b.tar.xz -C $S/b
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
timeout 90 $S/b/w4a16_test_gpu_decode --gtest_filter='Decode.EveryConfigurationM1To16:Decode.BulkStreamedX:Decode.BulkForcedPlansPersistentItems' > $OUT/t_decode.log 2>&1
log "decode tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/t_decode.log | head
D="--shapes llama8b.o,llama8b.qkv,8192x8192,llama8b.gate_up,llama70b.gate_up --ms 4,6,8 --dtypes f16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  for side in C N; do
    B=$S/b/w4a16_bench_gpu; [ $side = C ] && B=$S/b/w4a16_bench_gpu_c2
    timeout 40 $B $D --csv $S/r/${side}_$r.csv > /dev/null 2>&1; log "$side $r rc=$?"
  done
done
echo "### old: C (call 2's main), new: N (the one-round rule)" > $OUT/ab.md
python3 bench/gpu/ab_compare.py $(ls $S/r/C_*.csv | paste -sd,) $(ls $S/r/N_*.csv | paste -sd,) >> $OUT/ab.md 2>&1
grep "rows; old" $OUT/ab.md
timeout 150 $S/b/w4a16_bench_gpu --registry cuda_hybrid,cuda_decode,cuda_prefill --no-cublas --decode-max-m 0 \
  --shapes llama8b.down,8192x8192,qwen0.5b.gate_up,llama8b.o,llama8b.qkv,llama70b.gate_up --ms 8,9,12,16 --dtypes f16,bf16 \
  --scalars uint4b8,uint4 --no-extra-groups --csv $OUT/hybrid.csv > $S/r/h.log 2>&1; log "hybrid rc=$? $(tail -1 $S/r/h.log)"
tar -czf $OUT/r.tar.gz -C $S r
# 4. On an H200 only (its 9..16-token rule is still the streaming kernel; the box never ran there): the streamed bulk
#    kernel forced (F) against the default (N) on the 10 PERF.md shapes x M = 4, 6, 8, 9, 12, 16 x fp16 / bf16 x both
#    scalar types, 2 rounds, and the prefill path (P) at 9 / 12 / 16 once: the H200's rule and hybrid columns.
if grep -q H200 $OUT/gpu.txt; then
  ALL=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
  A="--shapes $ALL --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
  for r in 1 2; do
    timeout 60 $S/b/w4a16_bench_gpu $A --ms 4,6,8,9,12,16 --csv $S/r/H200N_$r.csv > /dev/null 2>&1; log "H200 N $r rc=$?"
    W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1 timeout 60 $S/b/w4a16_bench_gpu $A --ms 4,6,8,9,12,16 \
      --csv $S/r/H200F_$r.csv > /dev/null 2>&1; log "H200 F $r rc=$?"
  done
  timeout 60 $S/b/w4a16_bench_gpu $A --ms 9,12,16 --registry cuda_prefill --decode-max-m 0 --csv $S/r/H200P_1.csv > /dev/null 2>&1
  log "H200 P rc=$?"
  echo "### H200: old: N (default), new: F (the streamed bulk kernel forced)" >> $OUT/ab.md
  python3 bench/gpu/ab_compare.py $S/r/H200N_1.csv,$S/r/H200N_2.csv $S/r/H200F_1.csv,$S/r/H200F_2.csv >> $OUT/ab.md 2>&1
  grep "rows; old" $OUT/ab.md | tail -1
  tar -czf $OUT/r.tar.gz -C $S r
fi
