#!/usr/bin/env bash
# Packs .carry-prefill-dq/ for the device run (scripts/prefill-dq/run.sh): the branch's build in
# $NEW (default build/), main's in $OLD (default /work/wt-prefill-dq-base/build: a main worktree,
# with tests/gpu/prefill/prefill_dq_ab.cpp and its CMake lines added, library sources untouched).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
CARRY=${CARRY:-/work/main/.carry-prefill-dq}
NEW=${NEW:-$ROOT/build}
OLD=${OLD:-/work/wt-prefill-dq-base/build}
T=$(mktemp -d)
mkdir -p "$T/new" "$T/old" "$CARRY"
for b in prefill_gpu_test w4a16_test_prefill_dequant_host prefill_dq_ab; do cp "$NEW/tests/gpu/prefill/$b" "$T/new/"; done
cp "$OLD/tests/gpu/prefill/prefill_dq_ab" "$T/old/"
strip "$T"/new/* "$T"/old/*
tar -cJf "$CARRY/bins.tar.xz" -C "$T" new old
rm -rf "$T"
cp "$ROOT/scripts/prefill-dq/run.sh" "$ROOT/scripts/prefill-dq/ab_table.py" "$CARRY/"
{
  echo "branch prefill-dq $(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" log -1 --format=%s | cut -c1-80))"
  echo "old: main $(git -C "$OLD/.." rev-parse --short HEAD 2>/dev/null) + prefill_dq_ab driver; built $(date -u +%FT%TZ)"
} >"$CARRY/BUILD.txt"
du -sh "$CARRY"
