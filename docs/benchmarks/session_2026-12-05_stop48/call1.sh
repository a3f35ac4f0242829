#!/usr/bin/env bash
# Stop 48, call 1. Carries: .carry-s47e (stop 47's final w4a16_bench_gpu), .carry-s48addr (scripts/prefill-ab/pack.sh:
# branch prefill-lean-addr = stop 47's prefill_lean_addr.patch, and main's prefill_dq_ab), .carry-s48diag (prefill_bench
# of main and of two timing-only builds, -DW4A16_DIAG_PREFILL=...: dx no x refill, dwx neither x nor W refill).
#  1. stop 47's call5.sh: the hybrid's final llama8b.o table at M = 12..16 against both paths.
#  2. the lean-address branch: its prefill GPU tests, bit-identical hashes against main, A/B at M = 64 / 128 / 256.
#  3. the k loop's bound without x traffic (dx), without x and W traffic (dwx) against main: tune_tma of
#     bm64 occ2 (config 23) at M = 64 (splits 1, 2, 4) and bm128_bn128 occ2 (32) at M = 128 (splits 2, 4), 2 rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
O=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee $O/gpu.txt
mkdir -p $O/c5 && OUT=$O/c5 timeout 120 bash docs/benchmarks/session_2026-12-05_stop47/call5.sh > $O/c5/log.txt 2>&1
tail -25 $O/c5/verify.txt; echo "call5 done t=$(($(date +%s)-T0))"
OUT=$O PREFILL_AB_NAME=lean_addr PREFILL_AB_BUDGET_S=260 PREFILL_AB_MS=64,128,256 \
  PREFILL_AB_SHAPES=8192x8192:8192:8192,llama8b.gate_up:28672:4096,llama8b.down:4096:14336,llama70b.gate_up:57344:8192,llama8b.qkv:6144:4096 \
  timeout 280 bash .carry-s48addr/run.sh > /dev/null 2>&1
tail -40 $O/lean_addr.log; echo "lean_addr done t=$(($(date +%s)-T0))"
W=/tmp/s48d; rm -rf $W; mkdir -p $W && tar -xJf .carry-s48diag/bins.tar.xz -C $W
for r in 1 2; do
  for b in main dx dwx; do
    W4A16_PREFILL_TUNE_MS=64 W4A16_PREFILL_TUNE_SPLITS=1,2,4 W4A16_PREFILL_TUNE_CONFIGS=23 \
    W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up \
      timeout 60 $W/$b/prefill_bench $O/diag_${b}_m64_r$r.csv tune_tma > $W/${b}_m64_r$r.log 2>&1 || echo "rc=$? $b m64 r$r"
    W4A16_PREFILL_TUNE_MS=128 W4A16_PREFILL_TUNE_SPLITS=2,4 W4A16_PREFILL_TUNE_CONFIGS=32 \
    W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up \
      timeout 40 $W/$b/prefill_bench $O/diag_${b}_m128_r$r.csv tune_tma > $W/${b}_m128_r$r.log 2>&1 || echo "rc=$? $b m128 r$r"
    echo "$b round $r t=$(($(date +%s)-T0))"
  done
done
python3 - $O <<'PY' | tee $O/diag.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in glob.glob(os.path.join(sys.argv[1], 'diag_*.csv')):
    b = os.path.basename(p).split('_')[1]
    for r in csv.DictReader(open(p)):
        if r['kernel'].startswith('cuda_prefill:'): t[(r['shape'], int(r['M']), r['kernel'].split(':', 1)[1], b)].append(float(r['us']))
        if r['kernel'] == 'cublas_f16': t[(r['shape'], int(r['M']), 'cublas_f16', b)].append(float(r['us']))
keys = sorted({k[:3] for k in t})
print('%-18s %5s %-42s %8s %7s %7s' % ('shape', 'M', 'tile:split', 'main us', 'dx/m', 'dwx/m'))
for k in keys:
    m = min(t.get(k + ('main',), [float('nan')]))
    print('%-18s %5d %-42s %8.2f' % (k[0], k[1], k[2], m) + ''.join(' %7.3f' % (min(t.get(k + (b,), [float('nan')])) / m) for b in ("dx", "dwx")))
PY
tar -czf $O/diag_csv.tar.gz -C $O $(cd $O && ls diag_*.csv) && rm $O/diag_*.csv
echo "total $(($(date +%s)-T0)) s"
