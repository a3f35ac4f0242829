#!/usr/bin/env bash
# Packs .carry-prefill-g1/ for the device run (scripts/prefill-g1/run.sh): the branch's build in
# $NEW (default build/), main's in $OLD (default /work/wt-prefill-g1-base/build: a main worktree
# with only tests/gpu/prefill/prefill_dq_ab.cpp taken from this branch, library sources untouched).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
CARRY=${CARRY:-/work/main/.carry-prefill-g1}
NEW=${NEW:-$ROOT/build}
OLD=${OLD:-/work/wt-prefill-g1-base/build}
T=$(mktemp -d)
mkdir -p "$T/new" "$T/old" "$CARRY"
for b in prefill_gpu_test w4a16_test_prefill_host w4a16_test_prefill_dequant_host prefill_dq_ab; do cp "$NEW/tests/gpu/prefill/$b" "$T/new/"; done
cp "$OLD/tests/gpu/prefill/prefill_dq_ab" "$T/old/"
strip "$T"/new/* "$T"/old/*
tar -cJf "$CARRY/bins.tar.xz" -C "$T" new old
rm -rf "$T"
cp "$ROOT/scripts/prefill-g1/run.sh" "$ROOT/scripts/prefill-g1/ab_table.py" "$CARRY/"
{
  echo "branch prefill-g1 $(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" log -1 --format=%s | cut -c1-80))"
  echo "old: main $(git -C "$OLD/.." rev-parse --short HEAD~1 2>/dev/null) + prefill_dq_ab driver of the branch ($(git -C "$OLD/.." rev-parse --short HEAD 2>/dev/null)); built $(date -u +%FT%TZ)"
} >"$CARRY/BUILD.txt"
du -sh "$CARRY"
