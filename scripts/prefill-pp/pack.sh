#!/usr/bin/env bash
# Packs the device run of branch prefill-pp into /work/main/.carry-prefill-pp/ (git-ignored there):
# stripped prefill_gpu_test + prefill_bench (tar.xz), run.sh, sched_ab_table.py, BUILD.txt.
# Run from the worktree root after `cmake --build build --target prefill_gpu_test prefill_bench`.
set -euo pipefail
DST=${1:-/work/main/.carry-prefill-pp}
mkdir -p "$DST"
T=$(mktemp -d)
cp build/tests/gpu/prefill/prefill_gpu_test build/tests/gpu/prefill/prefill_bench "$T"/
strip "$T"/prefill_gpu_test "$T"/prefill_bench
tar -cJf "$DST/bins.tar.xz" -C "$T" prefill_gpu_test prefill_bench
rm -rf "$T"
cp scripts/prefill-pp/run.sh scripts/prefill-pp/sched_ab_table.py "$DST"/
# ptxas -v of the four instantiation files (registers, spills, any C75xx serialization notice).
: >"$DST/ptxas.txt"
for f in f16_sym f16_zeros bf16_sym bf16_zeros; do
  /usr/local/cuda/bin/nvcc -I"$PWD/src/kernels/cuda" -I"$PWD/include" -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a \
    --expt-relaxed-constexpr -Xptxas=-warn-spills -Xptxas -v -std=c++17 -c "src/kernels/cuda/prefill/prefill_inst_$f.cu" \
    -o /dev/null >>"$DST/ptxas.txt" 2>&1
done
echo "ptxas: $(grep -c 'Compiling entry' "$DST/ptxas.txt") kernels, C75xx notices: $(grep -c C75 "$DST/ptxas.txt"), spilling: $(grep 'spill' "$DST/ptxas.txt" | grep -vc '0 bytes spill stores, 0 bytes spill loads')"
{
  echo "branch $(git rev-parse --abbrev-ref HEAD) commit $(git rev-parse --short HEAD)"
  echo "packed $(date -u +%FT%TZ); nvcc $(/usr/local/cuda/bin/nvcc --version | tail -2 | head -1)"
  echo "run: OUT=/some/dir bash .carry-prefill-pp/run.sh   (repository root)"
  echo "ptxas: $(grep -c 'Compiling entry' "$DST/ptxas.txt") kernels, C75xx notices: $(grep -c C75 "$DST/ptxas.txt"), spilling: $(grep 'spill' "$DST/ptxas.txt" | grep -vc '0 bytes spill stores, 0 bytes spill loads')"
} >"$DST/BUILD.txt"
ls -la "$DST"
