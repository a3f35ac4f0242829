#!/usr/bin/env bash
# Stop 54 call 3 (an H100: the H200 refused four starts): call2.sh's parts A (4 rounds) and D.
ROUNDS=4 PART_B=0 PART_C=0 bash docs/benchmarks/session_2026-12-06_stop54/call2.sh
