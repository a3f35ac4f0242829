#!/usr/bin/env bash
# Stop 60 call B (carries .carry-r60 + .carry-t60): stop 59's next_call3.sh (branch prefill-next-ring: the whole
# prefill_gpu_test, then ring on / off in one interleaved run, 2 processes) and next_call2.sh (the boundary trace with
# next_info on / off), each writing under its own $OUT folder.
set -u
P=docs/benchmarks/session_2026-12-06_stop59
O=$OUT
mkdir -p $O/c3 $O/c2
OUT=$O/c3 bash $P/next_call3.sh > $O/c3/stdout.txt 2>&1; echo "call3 done ${SECONDS}s"; cat $O/c3/gpu.txt; cat $O/c3/table.txt 2>/dev/null
OUT=$O/c2 bash $P/next_call2.sh > $O/c2/stdout.txt 2>&1; echo "call2 done ${SECONDS}s"; cat $O/c2/trace_summary.txt
