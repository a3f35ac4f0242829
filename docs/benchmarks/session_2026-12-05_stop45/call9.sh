#!/usr/bin/env bash
# Stop 45, call 9: moe_prepared.py with its memory steps printed (call 8's figures left ~200-280 MiB unexplained).
. scripts/lib/device-env.sh
W=/tmp/s45c9; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s45/py.tar.xz -C $W/py
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/moe_prepared.txt
PYTHONPATH=$W/py timeout 150 python3 docs/benchmarks/session_2026-12-05_stop45/moe_prepared.py 2>&1 | tee -a $OUT/moe_prepared.txt
