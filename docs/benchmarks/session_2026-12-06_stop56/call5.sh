#!/usr/bin/env bash
# Stop 56 call 5 (carry .carry = main d6bd515's GPU binaries, pack-gpu's list less w4a16_bench_read / w4a16_tp_gpu_test,
# XZ_OPT="-9e -T2"): scripts/gpu-check on the merged split tail and the llama70b.gate_up M = 193..256 entry: every GPU
# test binary, both memcheck subsets (the persistent test with its tail tiles among them), the interleaved M >= 1024
# rows with llama70b.gate_up and the clock probe, the MoE benchmark; no sweep / peers / read ceiling (call 6).
set -u
W4A16_SKIP_SWEEP=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_READ=1 W4A16_TEST_TIMEOUT=200 bash scripts/gpu-check > /dev/null 2>&1
echo "gpu-check rc=$?"
grep -E "^== |PASSED|FAILED|ERROR SUMMARY|x cuBLAS|^clock .*_il" $OUT/gpu-check.log | grep -v "^== device" | head -120
