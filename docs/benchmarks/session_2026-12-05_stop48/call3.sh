#!/usr/bin/env bash
# Stop 48 call 3 (prepared; after call1.sh's multicast test passed: it covers configs 35-38). Carry: .carry-s48mc.
# The x-multicast twins of the large-M tiles against them in one process, reduce forced to the kernel (the twins have
# no cluster reduce), 2 rounds: bm256_bn128 (20) against 37 at M = 256 / 1024, splits 1 / 2, on 8192x8192,
# llama8b.qkv and qwen0.5b.gate_up (x is eight ninths of the bytes a bm256_bn128 CTA reads); bm128_bn256 (22) against 38
# at M = 128 / 256 on llama8b.o and llama8b.qkv; bm64 occ2 (23) against its tma_eb twin (39: no CTA barrier in the k
# loop; stop 22 put 13% of M = 64's k-loop samples on that barrier) and its SCHED 2 twin (25: the next tile's W words
# read before the wgmma wait) at M = 64. cuBLAS fp16 in the same processes.
T0=$(date +%s)
. scripts/lib/device-env.sh
O=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee $O/gpu.txt
W=/tmp/s48c3; rm -rf $W; mkdir -p $W && tar -xJf .carry-s48mc/bins.tar.xz -C $W
for r in 1 2; do
  W4A16_PREFILL_SPLIT_REDUCE=kernel W4A16_PREFILL_TUNE_MS=256,1024 W4A16_PREFILL_TUNE_SPLITS=1,2 W4A16_PREFILL_TUNE_CONFIGS=20,37 \
  W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.qkv,qwen0.5b.gate_up \
    timeout 120 $W/mc/prefill_bench $O/t_mc_big_r$r.csv tune_tma > $W/big_r$r.log 2>&1 || echo "rc=$? big r$r"
  W4A16_PREFILL_SPLIT_REDUCE=kernel W4A16_PREFILL_TUNE_MS=128,256 W4A16_PREFILL_TUNE_SPLITS=1,2,4 W4A16_PREFILL_TUNE_CONFIGS=22,38 \
  W4A16_PREFILL_TUNE_SHAPES=llama8b.o,llama8b.qkv \
    timeout 90 $W/mc/prefill_bench $O/t_mc_mid_r$r.csv tune_tma > $W/mid_r$r.log 2>&1 || echo "rc=$? mid r$r"
  # the CTA barrier: bm64 occ2 early issue (23) against its tma_eb twin (39, empty mbarriers), both per-half kernels
  # (39 has no one-group variant), reduce kernel
  W4A16_PREFILL_ONE_GROUP=0 W4A16_PREFILL_SPLIT_REDUCE=kernel W4A16_PREFILL_TUNE_MS=64 W4A16_PREFILL_TUNE_SPLITS=1,2,4 \
  W4A16_PREFILL_TUNE_CONFIGS=23,25,39 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up \
    timeout 70 $W/mc/prefill_bench $O/t_eb_m64_r$r.csv tune_tma > $W/eb_r$r.log 2>&1 || echo "rc=$? eb r$r"
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 - $O <<'PY' | tee $O/tune.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in glob.glob(os.path.join(sys.argv[1], 't_*.csv')):
    for r in csv.DictReader(open(p)):
        k = r['kernel']
        if k.startswith('cuda_prefill:') or k == 'cublas_f16':
            t[(r['shape'], int(r['M']), k.split(':', 1)[1] if ':' in k else k)].append(float(r['us']))
def best(key): return min(t[key]) if t.get(key) else float('nan')
print('multicast (tmamc), empty-barrier (tmaeb) and early-W-read (ei2) twins (the last two per-half kernels) against their tma tile (same process; reduce kernel), best of 2 rounds:')
for (sh, m, cfg) in sorted(t):
    if '_tmamc_' not in cfg and '_tmaeb_' not in cfg and '_ei2:' not in cfg: continue
    base = cfg.replace('_tmamc_', '_tma_').replace('_tmaeb_', '_tma_').replace('_ei2:', '_ei:')
    cb = best((sh, m, 'cublas_f16'))
    print('%-18s M=%5d %-44s %8.2f us  tma %8.2f  twin/tma %.3f  x cuBLAS %.2f -> %.2f' % (
        sh, m, cfg, best((sh, m, cfg)), best((sh, m, base)), best((sh, m, cfg)) / best((sh, m, base)),
        cb / best((sh, m, base)), cb / best((sh, m, cfg))))
PY
tar -czf $O/tune_csv.tar.gz -C $O $(cd $O && ls t_*.csv) && rm $O/t_*.csv
echo "total $(($(date +%s)-T0)) s"
