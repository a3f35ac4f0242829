#!/usr/bin/env bash
# Packs the device run of branch prefill-red into /work/main/.carry-prefill-red/ from build/ of
# this worktree: stripped prefill_gpu_test + prefill_bench, the summary / fit scripts, the SASS and
# ptxas facts, BUILD.txt. Usage (worktree root, after building both targets): bash scripts/prefill-red/pack.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
C=/work/main/.carry-prefill-red
S=$(mktemp -d)
mkdir -p "$C"
cp build/tests/gpu/prefill/prefill_gpu_test build/tests/gpu/prefill/prefill_bench "$S"/
strip "$S"/prefill_gpu_test "$S"/prefill_bench
cp scripts/prefill-red/summary.py bench/gpu/fit_prefill_plan.py bench/gpu/fit_search.py "$S"/
{ echo "branch $(git rev-parse --abbrev-ref HEAD) commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' +uncommitted')";
  echo "built $(date -u +%FT%TZ) with $(/usr/local/cuda/bin/nvcc --version | tail -1)"; } >"$S/BUILD.txt"
[ -f /tmp/pr_sass.txt ] && cp /tmp/pr_sass.txt "$S/sass.txt"
(cd "$S" && tar -cf extras.tar summary.py fit_prefill_plan.py fit_search.py BUILD.txt $( [ -f sass.txt ] && echo sass.txt) )
tar -cJf "$C/bins.tar.xz" -C "$S" prefill_gpu_test prefill_bench extras.tar
cp scripts/prefill-red/run.sh "$C/run.sh"
cp "$S/BUILD.txt" "$C/BUILD.txt"
rm -rf "$S"
du -sh "$C"; ls -la "$C"
