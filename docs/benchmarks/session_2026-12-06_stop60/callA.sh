#!/usr/bin/env bash
# Stop 60 call A (carries .carry-m60 + .carry-b60): stop 59's next_call1.sh (main c4c2722: the persistent test's new
# checks, then issue 5's rows) and next_call4.sh (branch prefill-epi-bias: the whole prefill_gpu_test, then the
# M >= 1024 rows), each writing under its own $OUT folder.
set -u
P=docs/benchmarks/session_2026-12-06_stop59
O=$OUT
mkdir -p $O/c1 $O/c4
OUT=$O/c1 bash $P/next_call1.sh > $O/c1/stdout.txt 2>&1; echo "call1 done ${SECONDS}s"; tail -3 $O/c1/gpu.txt
OUT=$O/c4 bash $P/next_call4.sh > $O/c4/stdout.txt 2>&1; echo "call4 done ${SECONDS}s"; cat $O/c4/gpu.txt
