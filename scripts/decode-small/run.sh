#!/usr/bin/env bash
# Device run of branch decode-small (issue 4: the lean decode kernel for small layers, decode_small.cu).
# From the repository root of a copy of the tree with .carry-decode-small/ (made by
# scripts/decode-small/pack.sh):   OUT=/some/dir bash .carry-decode-small/run.sh
# Writes two files: $OUT/decode-small.log (build facts, test summary, the A/B table) and
# $OUT/decode_small.csv (every bench row of both runs, column `run` = old | small).
# Steps, each bounded by `timeout`, wall <= ~150 s in all:
#   1. w4a16_test_gpu_decode (<= 120 s): every decode GPU test, the Small* ones force the new
#      kernel (W4A16_DECODE_SMALL=1) against the f64 reference, poisoned outputs, guard bytes, graphs.
#   2. w4a16_bench_gpu, W4A16_DECODE_SMALL=0 (the streaming kernel) + cuBLAS fp16/bf16;
#   3. the same sweep, W4A16_DECODE_SMALL=1 (small kernel wherever its plan fits one wave);
#      Qwen2.5-0.5B qkv/o/gate_up/down + llama8b.o/qkv, M = 1,2,4,8,12,16, fp16/bf16 x uint4b8/uint4, g128,
#      shared timer (graph replay over rotating weight copies, cold L2, median).
#   4. (if >= 15 s are left) the small kernel with W4A16_DECODE_SMALL_T=8 on the Qwen layers, M = 1, 16;
#   5. summary table: shape, M, old us, small us, old/small, cuBLAS, small T>=8 us.
set -uo pipefail
T0=$(date +%s)
BUDGET=${DECODE_SMALL_BUDGET_S:-145}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
cd "$(dirname "$0")/.."
HERE=.carry-decode-small
OUT=${OUT:?OUT must name the output folder}
mkdir -p "$OUT"
LOG="$OUT/decode-small.log"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
W=$(mktemp -d /tmp/decode-small-run.XXXXXX)
. scripts/lib/device-env.sh  # CUDA runtime + cuBLAS on LD_LIBRARY_PATH (run from the repository root)
tar -xJf "$HERE/bins.tar.xz" -C "$W" || { say "unpack of $HERE/bins.tar.xz failed"; exit 1; }
BIN="$W/bin"
cat "$HERE/BUILD.txt" 2>/dev/null | tee -a "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | tee -a "$LOG"
for b in "$BIN"/*; do ldd "$b" 2>/dev/null | grep "not found" | sed "s|^|$(basename "$b"): |" | tee -a "$LOG"; done
say "== pack time: ptxas -v of the small kernels (registers, spills) and their SASS"
cat "$HERE/ptxas.txt" "$HERE/sass.txt" >>"$LOG" 2>/dev/null

t=$(( $(left) - 60 )); [ $t -gt 120 ] && t=120; [ $t -lt 20 ] && t=20
say "== GPU tests: w4a16_test_gpu_decode (timeout $t s)"
timeout $t "$BIN/w4a16_test_gpu_decode" --gtest_brief=1 >"$W/tests.txt" 2>&1
rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|Expected|Which is|rel_err|Value of|Actual|M=|error" "$W/tests.txt" | head -60 | tee -a "$LOG"
[ $rc -eq 0 ] && say "tests PASS" || say "tests FAIL rc=$rc (124 = timeout)"

ARGS=(--shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.o,llama8b.qkv --ms 1,2,4,8,12,16
      --dtypes f16,bf16 --scalars uint4b8,uint4 --groups 128 --no-extra-groups)
t=$(( ($(left) - 6) * 55 / 100 )); [ $t -lt 10 ] && t=10
say "== bench 1: W4A16_DECODE_SMALL=0 (streaming kernel) + cuBLAS (timeout $t s)"
W4A16_DECODE_SMALL=0 timeout $t "$BIN/w4a16_bench_gpu" "${ARGS[@]}" --csv "$W/old.csv" >"$W/old.txt" 2>&1
say "bench 1 rc=$? (124 = timeout: the CSV keeps the rows done)"
t=$(( ($(left) - 4) * 75 / 100 )); [ $t -lt 10 ] && t=10
say "== bench 2: W4A16_DECODE_SMALL=1 (small kernel where its plan fits one wave) (timeout $t s)"
W4A16_DECODE_SMALL=1 timeout $t "$BIN/w4a16_bench_gpu" "${ARGS[@]}" --no-cublas --csv "$W/small.csv" >"$W/small.txt" 2>&1
say "bench 2 rc=$?"
: >"$W/t8.txt"
t=$(( $(left) - 4 ))
if [ $t -ge 15 ]; then  # optional: the tile bucket (fewer, longer warps) on the Qwen layers, M = 1 and 16, fp16 uint4b8
  say "== bench 3: W4A16_DECODE_SMALL=1 W4A16_DECODE_SMALL_T=8 (timeout $t s)"
  W4A16_DECODE_SMALL=1 W4A16_DECODE_SMALL_T=8 timeout $t "$BIN/w4a16_bench_gpu" --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down \
    --ms 1,16 --dtypes f16 --scalars uint4b8 --groups 128 --no-extra-groups --no-cublas --csv "$W/t8.csv" >"$W/t8.txt" 2>&1
  say "bench 3 rc=$?"
else
  say "== bench 3 (T >= 8) skipped: $t s left"
fi
for f in old small t8; do say "-- bench $f: last lines"; grep -v "^cuda_decode\|^cublas" "$W/$f.txt" | tail -4 | tee -a "$LOG"; done
say "== A/B summary (us per call, median of graph replays, cold L2; old = streaming kernel, small = decode_small.cu)"
python3 "$HERE/summary.py" "$W/old.csv" "$W/small.csv" "$OUT/decode_small.csv" "$W/t8.csv" 2>&1 | tee -a "$LOG"
say "wall $(( $(date +%s) - T0 )) s"
rm -rf "$W"
