#!/usr/bin/env bash
# Stop 57 call 1 (carry .carry = main 6ddf414's GPU binaries from scripts/pack-gpu, XZ_OPT="-9e -T2"): scripts/gpu-check on
# stop 56's review commit (time_graph as the interleaved timer with one member, the split tail's workspace helper),
# never run on a GPU before: every GPU test binary; no interleaved rows, memcheck,
# MoE benchmark, sweep, peers or read ceiling (device starts failed four times, ~13 of the 30 min went to them).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
W4A16_SKIP_SWEEP=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_READ=1 W4A16_SKIP_SANITIZER=1 W4A16_SKIP_MOE=1 W4A16_SKIP_PREFILL_IL=1 W4A16_TEST_TIMEOUT=200 bash scripts/gpu-check > /dev/null 2>&1
echo "gpu-check rc=$?"
grep -E "^== |PASSED|FAILED|ERROR SUMMARY|x cuBLAS|^clock .*_il" $OUT/gpu-check.log | grep -v "^== device" | head -120
