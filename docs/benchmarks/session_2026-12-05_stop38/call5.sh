#!/usr/bin/env bash
# Stop 38, call 5 (the last ~5 minutes of device time): call 4's profile put 8192x8192 M = 16 (the streaming kernel, plan
# 8,2: 128 blocks of 8 warps, one per SM) at 2 active / 0.52 eligible warps per scheduler. Every forced decode plan at
# M = 16 on 8192x8192 (scripts/decode-plan-sweep; llama8b.gate_up dropped: ~4 minutes of device time left), main 89f8ea1's sm_90a bench (carry .carry-s38).
D=$OUT  # the device tool's output folder (decode-plan-sweep takes OUT for its own)
mkdir -p .gpu && tar -xJf .carry-s38/bins.tar.xz -C .gpu
W=/tmp/s38c5; mkdir -p $W
OUT=$W W4A16_SWEEP_SHAPES="8192x8192" W4A16_SWEEP_MS=16 timeout 110 bash scripts/decode-plan-sweep > $W/sweep.txt 2>&1
echo "rc=$?"
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open('/tmp/s38c5/plans.csv')))
for r in sorted(rows, key=lambda r: (r['shape'], float(r['us']))):
    if r['kernel'].startswith('cuda'): print(f"{r['shape']:16s} {r['variant']:8s} {float(r['us']):8.2f} us ok={r['ok']} {r['plan'][:70]}")
PY
cp $W/plans.csv $W/plans.log "$D"/ 2>/dev/null
