#!/usr/bin/env bash
# Stop 45, call 6: where the device memory goes around prepare_modules (memdiag.py: free memory, torch's allocations and
# the op caches after each step, twice in one process). Carry .carry-s45/py.tar.xz.
. scripts/lib/device-env.sh
W=/tmp/s45c6; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py
PYTHONPATH=$W/py timeout 120 python3 docs/benchmarks/session_2026-12-05_stop45/memdiag.py 2>&1 | tee $OUT/memdiag.txt
