#!/usr/bin/env bash
# Stop 54 call 5 (an H200; carries .carry-s54b and .carry-s52c4): call 4 (the interleaved prefill / cuBLAS rows with the
# clock log, 3 processes) on the card of the targets, then stop 52's call7.sh (the uint4 hybrid, M = 1..32) into $OUT/c.
O=$OUT
bash docs/benchmarks/session_2026-12-06_stop54/call4.sh
mkdir -p $O/c; OUT=$O/c bash docs/benchmarks/session_2026-12-06_stop52/call7.sh
