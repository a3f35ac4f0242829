#!/usr/bin/env bash
# Stop 55 call 5 (carry .carry = the GPU test binaries, the CLI and prefill_bench of HEAD, as scripts/pack-gpu packs
# them less the sweep / read / MoE / TP benches): scripts/gpu-check on the final code, every GPU test binary, the
# memcheck subsets (the persistent loop's test now among them) and the interleaved M >= 1024 rows (shuffled rounds);
# the decode / hybrid sweep, the MoE bench and the peers left out (no decode or MoE code changed this stop).
set -u
rm -rf .gpu
W4A16_TEST_TIMEOUT=240 W4A16_SKIP_SWEEP=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_MOE=1 W4A16_SKIP_READ=1 timeout 540 bash scripts/gpu-check > /dev/null 2>&1
echo "gpu-check rc=$? (${SECONDS}s)"
grep -E "^== (PASS|FAIL)|memcheck|x cuBLAS|rc=|NVIDIA" $OUT/gpu-check.log
