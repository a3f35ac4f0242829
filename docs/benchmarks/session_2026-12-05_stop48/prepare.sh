#!/usr/bin/env bash
# Builds the carries of call1.sh / call2.sh on the build machine (no GPU needed), from the repository root of main:
#   bash docs/benchmarks/session_2026-12-05_stop48/prepare.sh
# Branches (this repository; also as patches beside this script): prefill-x-multicast (x_multicast.patch),
# prefill-lean-addr (lean_addr.patch), prefill-occ (occ.patch, call4.sh). Worktrees under /tmp, Release builds for sm_90a with ccache (~2.5 min each).
# Writes .carry-s48mc, .carry-s48addr, .carry-s47e and .carry-s48occ (all ignored by git; ~45 MB together: carry at most
# the ones a call names).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DW4A16_CUDA_ARCHS=90a -DW4A16_BUILD_PYTHON=OFF "${@:3}" >/dev/null; }
wt() {  # worktree of branch $1 (or patch $2 on main) at $3
  rm -rf "$3"; git worktree prune
  if git rev-parse --verify -q "$1" >/dev/null; then git worktree add -q --detach "$3" "$1"
  else git worktree add -q --detach "$3" HEAD && git -C "$3" apply "$ROOT/docs/benchmarks/session_2026-12-05_stop48/$2"; fi
}
PF="prefill_dq_ab prefill_gpu_test prefill_bench w4a16_test_prefill_host w4a16_test_prefill_dequant_host"
# main: the A/B baseline's prefill_dq_ab, and w4a16_bench_gpu for stop 47's call5.sh
cfg . build; CCACHE_BASEDIR=$ROOT ninja -C build prefill_dq_ab w4a16_bench_gpu >/dev/null
# the timing-only diagnostics (main's source): x never reloaded; neither x nor W
for d in "dx:W4A16_DIAG_NO_X_REFILL" "dwx:W4A16_DIAG_NO_X_REFILL;W4A16_DIAG_NO_W_REFILL"; do
  cfg . "build-${d%%:*}" "-DW4A16_DIAG_PREFILL=${d#*:}"; CCACHE_BASEDIR=$ROOT ninja -C "build-${d%%:*}" prefill_bench >/dev/null
done
wt prefill-x-multicast x_multicast.patch /tmp/s48-mc
cfg /tmp/s48-mc /tmp/s48-mc/build; CCACHE_BASEDIR=/tmp/s48-mc ninja -C /tmp/s48-mc/build $PF >/dev/null
wt prefill-lean-addr lean_addr.patch /tmp/s48-addr
cfg /tmp/s48-addr /tmp/s48-addr/build; CCACHE_BASEDIR=/tmp/s48-addr ninja -C /tmp/s48-addr/build $PF >/dev/null
wt prefill-occ occ.patch /tmp/s48-occ
cfg /tmp/s48-occ /tmp/s48-occ/build; CCACHE_BASEDIR=/tmp/s48-occ ninja -C /tmp/s48-occ/build prefill_bench >/dev/null
T=$(mktemp -d) && mkdir -p "$T/occ" .carry-s48occ && cp /tmp/s48-occ/build/tests/gpu/prefill/prefill_bench "$T/occ/" \
  && strip "$T/occ/"* && tar -cJf .carry-s48occ/b.tar.xz -C "$T" occ && rm -rf "$T"
T=$(mktemp -d)
mkdir -p "$T/mc" "$T/dx" "$T/dwx" .carry-s48mc
cp /tmp/s48-mc/build/tests/gpu/prefill/{prefill_bench,prefill_gpu_test} "$T/mc/"
cp build-dx/tests/gpu/prefill/prefill_bench "$T/dx/"; cp build-dwx/tests/gpu/prefill/prefill_bench "$T/dwx/"
strip "$T"/*/*; XZ_OPT=-9 tar -cJf .carry-s48mc/bins.tar.xz -C "$T" mc dx dwx; rm -rf "$T"
(cd /tmp/s48-addr && OLD="$ROOT/build" CARRY="$ROOT/.carry-s48addr" bash scripts/prefill-ab/pack.sh >/dev/null)
T=$(mktemp -d) && tar -xJf .carry-s48addr/bins.tar.xz -C "$T" && rm -f "$T/new/w4a16_test_prefill_host" "$T/new/prefill_bench" \
  && tar -cJf .carry-s48addr/bins.tar.xz -C "$T" new old && rm -rf "$T"   # the device needs neither
T=$(mktemp -d) && mkdir -p "$T/new" .carry-s47e && cp build/bench/gpu/w4a16_bench_gpu "$T/new/" && strip "$T/new/"* \
  && tar -cJf .carry-s47e/b.tar.xz -C "$T" new && rm -rf "$T"
du -sh .carry-s48mc .carry-s48addr .carry-s47e .carry-s48occ
