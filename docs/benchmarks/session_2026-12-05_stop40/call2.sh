#!/usr/bin/env bash
# Stop 40, call 2 (prepared; no device was lent in stop 40): the Qwen2.5-0.5B layers at M = 1, where the target is
# <= 3.0 us per call and qwen0.5b.gate_up measured 3.31 us (stop 39 call 3): every forced plan of the bulk kernel
# (scripts/decode-bulk-sweep: warps_n 1/2/4/8 x blocks per SM 1/2) and the other kernels' default, fp16 and bf16, 3
# rounds, every row against f64, on main 5ee3129's w4a16_bench_gpu (.carry-s39/main4.tar.xz). A plan faster than the
# default by more than the rounds' spread goes into the measured table (decode_plan.cu) in the next stop.
# Run from the repository root: bash docs/benchmarks/session_2026-12-05_stop40/call2.sh  (~2 minutes)
T0=$(date +%s)
W=/tmp/s40c2; mkdir -p $W .gpu/bin && tar -xJf .carry-s39/main4.tar.xz -C $W && cp $W/main4/w4a16_bench_gpu .gpu/bin/
W4A16_SWEEP_SHAPES=qwen0.5b.gate_up,qwen0.5b.down,qwen0.5b.qkv,qwen0.5b.o W4A16_SWEEP_MS=1 W4A16_SWEEP_DTYPES=f16,bf16 \
  W4A16_SWEEP_ROUNDS=3 bash scripts/decode-bulk-sweep
mkdir -p $W/d && tar -xzf $OUT/bulk_sweep.tar.gz -C $W/d
python3 - <<'PY'
import csv, glob, collections
t = collections.defaultdict(list)
for f in glob.glob('/tmp/s40c2/d/*.csv'):
    setting = f.split('/')[-1].rsplit('_', 1)[0]
    for r in csv.DictReader(open(f)):
        if r['kernel'] == 'cuda_decode':
            t[(r['shape'], r['dtype'], setting)].append(float(r['us']))
best = {}
for (shape, dt, setting), v in sorted(t.items()):
    m = min(v)
    print(f"{shape:17s} {dt:5s} {setting:10s} best {m:6.2f} us (rounds {' '.join(f'{x:.2f}' for x in v)})")
    if (shape, dt) not in best or m < best[(shape, dt)][1]: best[(shape, dt)] = (setting, m)
for k, (s, m) in sorted(best.items()): print('BEST', k, s, f'{m:.2f}')
PY
echo "total $(($(date +%s)-T0)) s"
