#!/usr/bin/env bash
# Stop 76 call 5 (carry .carry-l76c: main as w4a16_bench_gpu, its W4A16_DIAG_BULK_X_ONCE build as w4a16_bench_gpu_xonce,
# branch xbox-tm (the streamed x box tile-major, no padding tile) as w4a16_bench_gpu_tm / w4a16_test_gpu_decode_tm).
# Results packed after each step into $OUT/r.tar.gz.
#  1. the branch's decode tests: every configuration at M = 1..16 on the default plans, the streamed bulk kernel's
#  2. what the x stream costs: the streamed bulk kernel forced, main (XF) against the x-once build (XO: x copied into
#     the first ring stages only, wrong results by design), 6 layers x M = 4 / 8 / 12 / 16, fp16 uint4b8, 2 rounds
#  3. the branch against main, default plans (N / T), 10 PERF.md shapes x M = 4, 6, 8, 9, 12, 16 x fp16 / bf16 x
#     both scalar types, 2 rounds (on an H200 the default at 9..16 is the streaming kernel: the T rows equal N there)
#  4. H200 only: the branch's streamed bulk kernel forced (TF) at the same points, 2 rounds, and the prefill path (P) at
#     9 / 12 / 16: the H200's 4..16-token rule
set -u
. scripts/lib/device-env.sh
S=/tmp/s76; rm -rf $S; mkdir -p $S/b $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l76c/b.tar.xz -C $S/b
B=$S/b/w4a16_bench_gpu; T=$S/b/w4a16_bench_gpu_tm
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
pack() { tar -czf $OUT/r.tar.gz -C $S r; }
timeout 90 $S/b/w4a16_test_gpu_decode_tm --gtest_filter='Decode.EveryConfigurationM1To16:Decode.BulkStreamedX' > $OUT/t_decode.log 2>&1
log "decode tests (tm) rc=$?"; grep -E "^\[  (PASSED|FAILED) |FAILED \]" $OUT/t_decode.log | head
F="W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_XSTREAM=1"
X="--shapes 8192x8192,llama8b.down,llama8b.gate_up,llama70b.gate_up,llama8b.o,llama8b.qkv --ms 4,8,12,16 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  env $F timeout 40 $B $X --csv $S/r/XF_$r.csv > /dev/null 2>&1; log "XF $r rc=$?"
  env $F timeout 40 $S/b/w4a16_bench_gpu_xonce $X --csv $S/r/XO_$r.csv > /dev/null 2>&1; log "XO $r rc=$?"
done
pack
ALL=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
A="--shapes $ALL --ms 4,6,8,9,12,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  timeout 60 $B $A --csv $S/r/N_$r.csv > /dev/null 2>&1; log "N $r rc=$?"
  timeout 60 $T $A --csv $S/r/T_$r.csv > /dev/null 2>&1; log "T $r rc=$?"
  pack
done
if grep -q H200 $OUT/gpu.txt; then
  for r in 1 2; do env $F timeout 60 $T $A --csv $S/r/TF_$r.csv > /dev/null 2>&1; log "TF $r rc=$?"; pack; done
  timeout 60 $B ${A/--ms 4,6,8,9,12,16/--ms 9,12,16} --registry cuda_prefill --decode-max-m 0 --csv $S/r/P_1.csv > /dev/null 2>&1
  log "P rc=$?"; pack
fi
