#!/usr/bin/env bash
# Device run of branch prefill-red (split-K reduced in a thread-block cluster + PDL on the prefill
# launch). Run from the repository root of a copy of the tree with .carry-prefill-red/ (made by
# scripts/prefill-red/pack.sh):   OUT=/some/dir bash .carry-prefill-red/run.sh
# Writes exactly two files: $OUT/prefill_red.log (steps + summary table) and $OUT/prefill_red.tar.gz
# (every step's log, ab.csv, the pack-time SASS / ptxas summary). Wall <= ~150 s: every step has a
# timeout clamped to what is left of PREFILL_BUDGET_S.
#   tests_new   the cluster reduce (every TMA config x splits 2..8 x fp16/bf16 x uint4b8/uint4, vs
#               f64, bitwise vs reduce_kernel and run to run) and the 3-layer PDL chain (stream + graph)
#   tests_rest  every other prefill GPU test (default knobs: cluster reduce + PDL now on everywhere)
#   bench       prefill_bench reduce_ab: cuBLAS fp16 + default plan x {old, pdl, cluster, both},
#               forced splits 1/2/4/8 on qwen0.5b.qkv and llama8b.o, one process, shared timer
set -uo pipefail
T0=$(date +%s)
BUDGET=${PREFILL_BUDGET_S:-145}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
OUT=${OUT:?OUT must name the output folder}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/prefill-red-run.XXXXXX)
LOG="$OUT/prefill_red.log"
: >"$LOG"
: >"$W/steps.txt"
say() { echo "$*" | tee -a "$LOG"; }

# Libraries: the toolkit's if any, else PyTorch's wheels (cuBLAS, cudart), as scripts/gpu-check does.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib \
  $(timeout 20 python3 -c 'import glob, os, nvidia; print(" ".join(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib"))))' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done

BIN="$W/bin"
mkdir -p "$BIN"
tar -xJf "$HERE/bins.tar.xz" -C "$BIN" 2>>"$LOG" || say "FATAL: cannot unpack $HERE/bins.tar.xz"
tar -xf "$BIN/extras.tar" -C "$W" 2>/dev/null  # summary.py, fit_prefill_plan.py, fit_search.py, sass.txt, BUILD.txt
unset W4A16_PREFILL_SPLIT_REDUCE W4A16_PREFILL_PDL W4A16_PREFILL_SKIP_XLOAD

run_step() {  # run_step NAME LIMIT_S CMD...: output to $W/NAME.log; 124/137 = killed by the timeout
  local name=$1 limit=$2
  shift 2
  local l
  l=$(left)
  ((limit > l - 6)) && limit=$((l - 6))
  if ((limit < 5)); then
    echo "$name: SKIPPED (budget left ${l}s)" | tee -a "$W/steps.txt" >>"$LOG"
    return 99
  fi
  local s rc what=ok
  s=$(date +%s)
  timeout -k 3 "$limit" "$@" >"$W/$name.log" 2>&1
  rc=$?
  ((rc != 0)) && what=FAILED
  ((rc == 124 || rc == 137)) && what="TIMEOUT (killed after ${limit}s: hang?)"
  echo "$name: rc=$rc $what, $(($(date +%s) - s))s (limit ${limit}s)" | tee -a "$W/steps.txt" >>"$LOG"
  return $rc
}

say "prefill-red device run $(date -u +%FT%TZ), budget ${BUDGET}s"
timeout 10 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >>"$LOG" 2>&1
cat "$W/BUILD.txt" >>"$LOG" 2>/dev/null
T="$BIN/prefill_gpu_test"
run_step tests_new 35 "$T" --gtest_filter='PrefillGpu.ClusterSplit*:PrefillGpu.ChainedLayers*:PrefillPlan.ReduceKnob*'
rest=$(($(left) - 72))
((rest > 40)) && rest=40
run_step tests_rest "$rest" "$T" --gtest_filter='Prefill*:DenseCache*:-PrefillGpu.ClusterSplit*:PrefillGpu.ChainedLayers*:PrefillPlan.ReduceKnob*'
run_step bench 70 "$BIN/prefill_bench" "$W/ab.csv" reduce_ab

python3 "$W/summary.py" "$W" >"$W/summary.txt" 2>&1 || echo "summary.py failed" >>"$W/summary.txt"
{ echo "== split term refit per variant (fit_prefill_plan.py)"; (cd "$W" && timeout 10 python3 fit_prefill_plan.py ab.csv 2>&1); } >>"$W/summary.txt"
cat "$W/summary.txt" >>"$LOG"
tar -czf "$OUT/prefill_red.tar.gz" -C "$W" --exclude=bin . 2>>"$LOG"
echo "total $(($(date +%s) - T0))s" >>"$LOG"
cat "$W/summary.txt"
echo "total $(($(date +%s) - T0))s; files: $OUT/prefill_red.log $OUT/prefill_red.tar.gz"
rm -rf "$W"
