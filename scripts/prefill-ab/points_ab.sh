#!/usr/bin/env bash
# A/B of the default prefill plan at chosen points (shape, token counts), as stop 26's calls ran it (device side):
#   scripts/prefill-ab/points_ab.sh "OLD_CMD" "NEW_CMD" POINTS DIR [ROUNDS]
# OLD_CMD / NEW_CMD: a prefill_dq_ab binary, optionally behind `env VAR=value` (one binary with a switch, e.g.
#   "env W4A16_PREFILL_TOKEN_SPLIT=0 $B" against "$B"), or two builds' binaries.
# POINTS: lines "name:N:K M,M,..." (prefill_dq_ab plans prints the points a build splits; plans_diff.py the points
#   where two builds' plans differ).
# Runs `prefill_dq_ab bench` (fp16, uint4b8 g = 128, cuBLAS fp16 in the same process) per line, rounds interleaved
# old new | new old | old new ..., merges each run's lines into DIR/bench_<old|new>_<round>.csv and prints
# scripts/prefill-ab/ab_table.py DIR (old / new median per point, geomean).
set -uo pipefail
OLD=${1:?OLD_CMD}; NEW=${2:?NEW_CMD}; POINTS=${3:?POINTS file}; DIR=${4:?output DIR}; ROUNDS=${5:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    [ "$b" = old ] && CMD=$OLD || CMD=$NEW
    out="$DIR/bench_${b}_$r.csv"; : > "$out"; i=0
    while read -r sh ms; do
      [ -z "$sh" ] && continue
      i=$((i + 1))
      part="$DIR/part_${b}_${r}_$i.csv"
      # shellcheck disable=SC2086  # CMD is a command line on purpose
      timeout 90 $CMD bench "$part" "$sh" "$ms" uint4b8 > "$DIR/log_${b}_${r}_$i.log" 2>&1 || echo "FAIL $sh ($b, round $r)"
      if [ -s "$part" ]; then
        if [ -s "$out" ]; then tail -n +2 "$part" >> "$out"; else cat "$part" > "$out"; fi
      fi
      rm -f "$part"
    done < "$POINTS"
    echo "round $r $b done"
  done
done
python3 "$HERE/ab_table.py" "$DIR"
