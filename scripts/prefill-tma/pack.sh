#!/usr/bin/env bash
# Packs the prefill TMA A/B device run (issue 5) into a carry folder, default
# .carry-prefill in the repository root (git-ignored: /.carry-*/):
#   bins.tar.xz       prefill_gpu_test, prefill_bench, w4a16_bench_gpu, stripped (67 MB raw would
#                     pass the 64 MiB carry limit; xz makes it ~5 MB)
#   run.sh summary.py the device script (OUT=... bash .carry-prefill/run.sh) and its summary
#   sass_summary.txt  per prefill kernel: HGMMA, MEMBAR, UTMALDG, SYNCS, BAR.SYNC counts (cuobjdump
#                     from $CUOBJDUMP or PATH; needs nvdisasm beside it)
#   BUILD.txt         branch, commit, date, nvcc
# Build first: cmake --build build -j2 --target prefill_gpu_test prefill_bench w4a16_bench_gpu
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-$PWD/.carry-prefill}
B=${BUILD_DIR:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for b in tests/gpu/prefill/prefill_gpu_test tests/gpu/prefill/prefill_bench bench/gpu/w4a16_bench_gpu; do
  cp "$B/$b" "$tmp/"
  strip "$tmp/$(basename "$b")"
done
mkdir -p "$DEST"
rm -f "$DEST"/bins.tar.xz "$DEST"/run.sh "$DEST"/summary.py "$DEST"/sass_summary.txt "$DEST"/BUILD.txt
tar -cJf "$DEST/bins.tar.xz" -C "$tmp" .
cp scripts/prefill-tma/run.sh scripts/prefill-tma/summary.py "$DEST/"
{
  echo "branch $(git rev-parse --abbrev-ref HEAD) commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src tests bench || echo ' + uncommitted changes')"
  echo "built $(date -u +%FT%TZ) with $(nvcc --version | tail -1), $B"
} >"$DEST/BUILD.txt"
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || true)}
if [ -n "$CUOBJDUMP" ]; then
  "$CUOBJDUMP" -sass "$B/tests/gpu/prefill/prefill_gpu_test" | python3 scripts/prefill-tma/sass_summary.py >"$DEST/sass_summary.txt"
  tail -1 "$DEST/sass_summary.txt"
else
  echo "no cuobjdump: no sass_summary.txt" | tee "$DEST/sass_summary.txt"
fi
ls -la "$DEST"
