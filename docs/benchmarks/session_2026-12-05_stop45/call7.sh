#!/usr/bin/env bash
# Stop 45, call 7: torch_prepared.py again (its M = 2048 outputs were counted as the first module's memory in call 5).
# Carry .carry-s45/py.tar.xz.
. scripts/lib/device-env.sh
W=/tmp/s45c7; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/torch_prepared.txt
PYTHONPATH=$W/py timeout 150 python3 docs/benchmarks/session_2026-12-05_stop45/torch_prepared.py 2>&1 | tee -a $OUT/torch_prepared.txt
