#!/usr/bin/env bash
# Stop 46, call 1: what stop 45 wrote after its device time ran out, then two measurements.
#   1. the MoE GPU tests (CudaMoe::create now uploads layout_host's arrays) and the registry GPU tests (Linear::adopt
#      building its non-owning weights directly), main's build at 1ca310b;
#   2. pytest with CUDA over every Python test (test_torch_prepared.py's from_checkpoint test among them);
#   3. stop 45's call10.sh loop: the hybrid's switch on qwen0.5b.qkv / o, cuda_decode against cuda_prefill at M = 7, 8, 9;
#   4. the small-layer kernel forced (W4A16_DECODE_SMALL=1) at each tile bucket (W4A16_DECODE_SMALL_T = 2 / 4 / 8 / 16)
#      against the default (the bulk kernel) on qwen0.5b.gate_up / down at M = 1, 2, 2 interleaved rounds (the Qwen
#      gate_up M = 1 target: 3.0 us; stop 45: 3.39);
#   5. moe_order.py: W4A16MoE / W4A16PreparedMoE / the prepared module over one buffer, timed in alternation.
# Carries: .carry-s46/g1.tar.xz (g1/: registry, MoE and decode GPU tests, w4a16_bench_gpu), .carry-s46/py.tar.xz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s46c1_out; mkdir -p $O; trap 'tar -czf $R/call1.tar.gz -C $O .' EXIT
W=/tmp/s46c1; rm -rf $W; mkdir -p $W/py && tar -xJf .carry-s46/py.tar.xz -C $W/py && tar -xJf .carry-s46/g1.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
(timeout 200 $W/g1/w4a16_test_gpu_moe --gtest_brief=1 > $O/test_moe.log 2>&1; timeout 150 $W/g1/w4a16_test_gpu_registry \
  --gtest_brief=1 > $O/test_registry.log 2>&1) &
PYTHONPATH=$W/py timeout 300 python3 -m pytest -q -p no:cacheprovider -rs python/tests > $O/pytest_gpu.log 2>&1
echo "pytest t=$(($(date +%s)-T0))"; grep -E "FAILED|Error|passed|failed" $O/pytest_gpu.log | tail -8
wait; echo "gtest t=$(($(date +%s)-T0))"
for f in test_moe test_registry; do echo "$f:"; grep -E '^\[  (PASSED|FAILED)|Failure|Expected|Which is' $O/$f.log | head -8; done
for r in 1 2; do
  timeout 90 $W/g1/w4a16_bench_gpu --registry cuda_decode,cuda_prefill --shapes qwen0.5b.qkv,qwen0.5b.o --ms 7,8,9 \
    --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16 --csv $O/switch_$r.csv > $O/switch_$r.log 2>&1 || echo "round $r rc=$?"
done
echo "switch t=$(($(date +%s)-T0))"
python3 - <<'PY' | tee $O/switch.txt
import csv, glob, collections
t = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/s46c1_out/switch_*.csv')):
    for r in csv.DictReader(open(f)):
        if r['kernel'].startswith('cuda_'):
            t[(r['shape'], r['dtype'], r['format'], int(r['m']), r['kernel'].split()[0])].append(float(r['us']))
keys = sorted({k[:4] for k in t})
for k in keys:
    d, p = min(t.get(k + ('cuda_decode',), [0])), min(t.get(k + ('cuda_prefill',), [0]))
    print(f"{k[0]:13s} {k[1]:9s} {k[2]:8s} M={k[3]}  decode {d:6.2f}  prefill {p:6.2f}  decode/prefill {d / p if p else 0:.3f}")
PY
for r in 1 2; do
  for v in default 2 4 8 16; do
    env=(); [ $v != default ] && env=(W4A16_DECODE_SMALL=1 W4A16_DECODE_SMALL_T=$v)
    env "${env[@]}" timeout 40 $W/g1/w4a16_bench_gpu --shapes qwen0.5b.gate_up,qwen0.5b.down --ms 1,2 --dtypes f16,bf16 \
      --scalars uint4b8 --no-extra-groups --no-cublas --csv $O/small_${v}_$r.csv > $O/small_${v}_$r.log 2>&1 || echo "small $v round $r rc=$?"
  done
done
echo "small t=$(($(date +%s)-T0))"
python3 - <<'PY' | tee $O/small.txt
import csv, glob, collections
t = collections.defaultdict(list)
for f in sorted(glob.glob('/tmp/s46c1_out/small_*.csv')):
    v = f.split('small_')[1].rsplit('_', 1)[0]
    for r in csv.DictReader(open(f)):
        if r['kernel'].startswith('cuda'):
            t[(r['shape'], r['dtype'], int(r['m']), v)].append((float(r['us']), r['ok'], r.get('plan', '')[:60]))
for k in sorted({k[:3] for k in t}):
    print(f"{k[0]:17s} {k[1]:9s} M={k[2]}  " + "  ".join(f"{v}: {min(t[k + (v,)])[0]:5.2f}{'' if all(o == 'ok' for _, o, _ in t[k + (v,)]) else '!'}" for v in ('default', '2', '4', '8', '16') if k + (v,) in t))
PY
PYTHONPATH=$W/py timeout 200 python3 docs/benchmarks/session_2026-12-05_stop46/moe_order.py > $O/moe_order.txt 2>&1
cat $O/moe_order.txt | tail -4; echo "done t=$(($(date +%s)-T0))"
