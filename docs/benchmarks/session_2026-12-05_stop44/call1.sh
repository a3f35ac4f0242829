#!/usr/bin/env bash
# Stop 44, call 1 (H200): what stop 43 prepared for the H200, in one machine start.
#   1. main's decode GPU tests (Decode.PerTokenOnHardX among them; stop 43 ran them on an H100 only);
#   2. stop 43's call3.sh rounds: the bulk kernel forced (W4A16_DECODE_BULK=1) against the default plans, 8 PERF.md
#      layers x M = 1, 2, 3, 4, 6, 8 x fp16 / bf16 uint4b8 g = 128, every row against f64 (bulk_by_default was fitted
#      on the H200 in stop 31; the H100 measured the bulk kernel 1.01-1.14x faster at some 2..8-token points);
#   3. stop 40's call 2: every forced bulk plan on the Qwen2.5-0.5B layers at M = 1 (target <= 3.0 us; gate_up 3.31).
#   Beside 1 (the same GPU, other processes): the registry GPU tests (GpuClaims now prepares from a host copy scrambled
#   before the runs) and pytest's CUDA cases (QuantizedLinear.drop_host; the torch op drops its host copy of CUDA weights).
# Carry .carry-s44 (not in git): c4.tar.xz (main's w4a16_test_gpu_decode, w4a16_bench_gpu; recipe in stop 43's
# call4.sh), reg.tar.xz (this stop's w4a16_test_gpu_registry, stripped, in reg/), py.tar.xz (the Python 3.12 package
# with CUDA: build-pydev/python/w4a16, .so stripped; scripts/pack-gpu with W4A16_DEVICE_PYTHON).
# Everything lands in one archive, $OUT/call1.tar.gz. TEST_S (120), BUDGET_S (330: stops new A/B rounds), ROUNDS (2).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s44c1_out; mkdir -p $O; trap 'tar -czf $R/call1.tar.gz -C $O .' EXIT
W=/tmp/s44c1; mkdir -p $W/py && for f in c4 reg; do tar -xJf .carry-s44/$f.tar.xz -C $W; done && tar -xJf .carry-s44/py.tar.xz -C $W/py
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
timeout 150 $W/reg/w4a16_test_gpu_registry --gtest_brief=1 > $O/test_registry.log 2>&1 &
PYTHONPATH=$W/py timeout 200 python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_torch_ops.py python/tests/test_linear.py \
  python/tests/test_moe.py > $O/pytest_gpu.log 2>&1 &
timeout ${TEST_S:-120} $W/c4/w4a16_test_gpu_decode --gtest_brief=1 > $O/test_decode.log 2>&1
echo "decode tests rc=$? t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is' $O/test_decode.log | head -12
wait
echo "registry tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|Failure|gpu claims' $O/test_registry.log | head -12
echo "pytest:"; grep -E "FAILED|Error|passed|failed" $O/pytest_gpu.log | tail -8
# 2: call3.sh reads .carry-s43/c3.tar.xz (the same bench binary)
mkdir -p $W/c3 .carry-s43 && cp $W/c4/w4a16_bench_gpu $W/c3/ && (cd $W && tar -cJf c3.tar.xz c3) && cp $W/c3.tar.xz .carry-s43/
mkdir -p $O/ab
OUT=$O/ab BUDGET_S=$(( ${BUDGET_S:-330} - ($(date +%s)-T0) )) ROUNDS=${ROUNDS:-2} bash docs/benchmarks/session_2026-12-05_stop43/call3.sh
# 3: scripts/decode-bulk-sweep runs .gpu/bin/w4a16_bench_gpu
mkdir -p .gpu/bin && cp $W/c4/w4a16_bench_gpu .gpu/bin/
W4A16_SWEEP_SHAPES=qwen0.5b.gate_up,qwen0.5b.down,qwen0.5b.qkv,qwen0.5b.o W4A16_SWEEP_MS=1 W4A16_SWEEP_DTYPES=f16,bf16 \
  W4A16_SWEEP_ROUNDS=2 OUT=$O bash scripts/decode-bulk-sweep > /dev/null
mkdir -p $W/d && tar -xzf $O/bulk_sweep.tar.gz -C $W/d
python3 - $W/d <<'PY' | tee $O/qwen_m1.txt
import csv, glob, collections, sys
t = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + '/*.csv'):
    setting = f.split('/')[-1].rsplit('_', 1)[0]
    for r in csv.DictReader(open(f)):
        if r['kernel'] == 'cuda_decode':
            t[(r['shape'], r['dtype'], setting)].append((float(r['us']), r.get('ok', '')))
best = {}
for (shape, dt, setting), v in sorted(t.items()):
    m = min(u for u, _ in v)
    print(f"{shape:17s} {dt:5s} {setting:10s} best {m:6.2f} us (rounds {' '.join(f'{u:.2f}' for u, _ in v)}) ok {' '.join(o for _, o in v)}")
    if (shape, dt) not in best or m < best[(shape, dt)][1]: best[(shape, dt)] = (setting, m)
for k, (s, m) in sorted(best.items()): print('BEST', k, s, f'{m:.2f}')
PY
echo "done t=$(($(date +%s)-T0))"
