#!/usr/bin/env bash
# Stop 39, call 1 (stop 38's call 5, widened): stop 38's profile put 8192x8192 M = 16 (the streaming kernel, plan 8,2:
# 128 blocks of 8 warps, one per SM) at 2 active / 0.52 eligible warps per scheduler. Every forced decode plan
# (scripts/decode-plan-sweep) at M = 8 / 16 on 8192x8192 and llama8b.gate_up, then the bulk kernel forced at 12 / 16
# tokens where its staged x fits (K = 4096), main 89f8ea1's sm_90a binaries (carry .carry-s38).
D=$OUT  # the device tool's output folder (decode-plan-sweep takes OUT for its own)
mkdir -p .gpu && tar -xJf .carry-s38/bins.tar.xz -C .gpu
. scripts/lib/device-env.sh
W=/tmp/s39c1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tail -1
OUT=$W W4A16_SWEEP_SHAPES="8192x8192 llama8b.gate_up" W4A16_SWEEP_MS=8,16 timeout 280 bash scripts/decode-plan-sweep > $W/sweep.txt 2>&1
echo "sweep rc=$?"
for b in 0 1; do
  W4A16_DECODE_BULK=$b timeout 60 .gpu/bin/w4a16_bench_gpu --shapes llama8b.gate_up,llama8b.qkv --ms 12,16 --dtypes f16 \
    --scalars uint4b8 --no-extra-groups --no-cublas --csv $W/bulk$b.csv > /dev/null 2>&1; echo "bulk=$b rc=$?"
done
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open('/tmp/s39c1/plans.csv')))
for r in sorted(rows, key=lambda r: (r['shape'], int(r['m']), float(r['us']))):
    print(f"{r['shape']:16s} m={r['m']:3s} {r['variant']:8s} {r['kernel'][:22]:22s} {float(r['us']):8.2f} us {r['pct_of_4.4TBps']:6s} ok={r['ok']} {r['plan'][:60]}")
for b in '01':
    try:
        for r in csv.DictReader(open(f'/tmp/s39c1/bulk{b}.csv')):
            print(f"BULK={b} {r['shape']:16s} m={r['m']:3s} {r['kernel'][:22]:22s} {float(r['us']):8.2f} us ok={r['ok']} {r['plan'][:70]}")
    except Exception as e: print('bulk', b, e)
PY
cp $W/*.csv $W/plans.log "$D"/ 2>/dev/null; true
