#!/usr/bin/env bash
# Packs a carry folder for scripts/prefill-ab/run.sh: the branch's build in $NEW (default this
# tree's build/; targets prefill_gpu_test, w4a16_test_prefill_host, w4a16_test_prefill_dequant_host,
# prefill_dq_ab, prefill_bench) and main's prefill_dq_ab in $OLD (a main worktree's build with the branch's
# tests/gpu/prefill/prefill_dq_ab.cpp, library sources untouched). BRANCH names the branch,
# CARRY the folder (default /work/main/.carry-$BRANCH).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
BRANCH=${BRANCH:-$(git -C "$ROOT" rev-parse --abbrev-ref HEAD)}
CARRY=${CARRY:-/work/main/.carry-$BRANCH}
NEW=${NEW:-$ROOT/build}
OLD=${OLD:?OLD must name the build folder of main with the prefill_dq_ab driver of the branch}
T=$(mktemp -d)
mkdir -p "$T/new" "$T/old" "$CARRY"
for b in prefill_gpu_test w4a16_test_prefill_host w4a16_test_prefill_dequant_host prefill_dq_ab prefill_bench; do cp "$NEW/tests/gpu/prefill/$b" "$T/new/"; done
cp "$OLD/tests/gpu/prefill/prefill_dq_ab" "$T/old/"
strip "$T"/new/* "$T"/old/*
tar -cJf "$CARRY/bins.tar.xz" -C "$T" new old
rm -rf "$T"
cp "$ROOT/scripts/prefill-ab/run.sh" "$ROOT/scripts/prefill-ab/ab_table.py" "$CARRY/"
{
  echo "branch $BRANCH $(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" log -1 --format=%s | cut -c1-80))"
  echo "old: $(git -C "$OLD/.." rev-parse --short HEAD 2>/dev/null) (main + the prefill_dq_ab driver of the branch); built $(date -u +%FT%TZ)"
} >"$CARRY/BUILD.txt"
du -sh "$CARRY"
