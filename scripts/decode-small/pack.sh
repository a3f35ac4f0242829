#!/usr/bin/env bash
# Packs the decode-small device run into CARRY (default .carry-decode-small under the repository
# root; the lead's tree wants /work/main/.carry-decode-small): stripped w4a16_test_gpu_decode and
# w4a16_bench_gpu (bins.tar.xz), run.sh, summary.py, ptxas -v of the small kernels (ptxas.txt),
# their SASS summary (sass.txt), BUILD.txt. Builds the targets first (build/, -j2).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CARRY=${CARRY:-$ROOT/.carry-decode-small}
BUILD=${BUILD:-$ROOT/build}
mkdir -p "$CARRY"
cmake --build "$BUILD" -j2 --target w4a16_test_gpu_decode w4a16_bench_gpu
T=$(mktemp -d)
mkdir -p "$T/bin"
strip -o "$T/bin/w4a16_test_gpu_decode" "$BUILD/tests/gpu/decode/w4a16_test_gpu_decode"
strip -o "$T/bin/w4a16_bench_gpu" "$BUILD/bench/gpu/w4a16_bench_gpu"
tar -cf - -C "$T" bin | xz -T2 -6 >"$CARRY/bins.tar.xz"
# ptxas -v of decode_small.cu: the library's own compile line plus -Xptxas -v (object discarded).
CMD=$(ninja -C "$BUILD" -t commands w4a16_cuda_kernels | grep "decode/decode_small.cu" | head -1 | sed -e 's|^.*ccache ||' -e "s| -o [^ ]*decode_small.cu.o| -o $T/small.o|" -e 's| -MD -MT [^ ]* -MF [^ ]*||')
(cd "$BUILD" && eval "$CMD -Xptxas -v") 2>&1 | python3 scripts/decode-small/ptxas_summary.py >"$CARRY/ptxas.txt"
/opt/cutools/cuobjdump -sass "$BUILD/src/kernels/cuda/CMakeFiles/w4a16_cuda_kernels.dir/decode/decode_small.cu.o" 2>/dev/null |
  python3 scripts/decode-small/sass_summary.py >"$CARRY/sass.txt"
cp scripts/decode-small/run.sh scripts/decode-small/summary.py "$CARRY/"
echo "branch $(git rev-parse --abbrev-ref HEAD), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src tests bench || echo ' (+uncommitted changes)'), built $(date -u) (nvcc $(nvcc --version | grep -o 'release [0-9.]*'), sm_90a)" >"$CARRY/BUILD.txt"
rm -rf "$T"
du -sh "$CARRY"; ls -la "$CARRY"
