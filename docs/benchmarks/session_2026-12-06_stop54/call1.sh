#!/usr/bin/env bash
# Stop 54 call 1: the two H200 runs stops 52 and 53 left prepared (H200 refused then): stop 53's call7.sh (row-split
# tails 12:2..12:6 on llama8b.gate_up M = 1024 / 2048 and llama70b.gate_up M = 1024, cuBLAS in the same process) and
# stop 52's call7.sh (the uint4 hybrid, M = 1..32). Carry .carry-s53c3 and .carry-s52c4.
set -u
O=$OUT
mkdir -p $O/s53c7 $O/s52c7
OUT=$O/s53c7 bash docs/benchmarks/session_2026-12-06_stop53/call7.sh
OUT=$O/s52c7 bash docs/benchmarks/session_2026-12-06_stop52/call7.sh
