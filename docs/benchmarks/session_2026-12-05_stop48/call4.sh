#!/usr/bin/env bash
# Stop 48 call 4 (H100): the M = 64 chain with more, smaller CTAs. Carry .carry-s48occ: branch prefill-occ's
# prefill_bench (configs 35 / 36 there: 64 weight rows x 64 tokens, one warpgroup per CTA, early issue, TMA x, 5 stages
# at 4 CTAs per SM / 4 stages at 5 CTAs per SM by registers; shared memory holds 4 of the latter with uint4b8, 3 / 3 with
# uint4) against main's bm64 occ2 (23, two warpgroups per CTA, 2 CTAs per SM): the same 16 warps per SM in 4
# independent CTAs instead of 2 coupled by a CTA barrier per tile. fp16 uint4b8 g = 128, per-half kernels on all three
# (the new configs have no one-group variant), reduce kernel, M = 64, splits 1 / 2 / 4 / 8, 2 rounds.
. scripts/lib/device-env.sh
O=$OUT; W=/tmp/s48c4; rm -rf $W; mkdir -p $W && tar -xJf .carry-s48occ/b.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
for r in 1 2; do
  W4A16_PREFILL_ONE_GROUP=0 W4A16_PREFILL_SPLIT_REDUCE=kernel W4A16_PREFILL_TUNE_MS=64 W4A16_PREFILL_TUNE_SPLITS=1,2,4,8 \
  W4A16_PREFILL_TUNE_CONFIGS=23,35,36 W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up \
    timeout 120 $W/occ/prefill_bench $O/t_occ_r$r.csv tune_tma > $W/r$r.log 2>&1 || { echo "rc=$? r$r"; tail -5 $W/r$r.log; }
done
python3 - $O <<'PY' | tee $O/tune.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in glob.glob(os.path.join(sys.argv[1], 't_occ_r*.csv')):
    for r in csv.DictReader(open(p)):
        k = r['kernel']
        if k.startswith('cuda_prefill:') or k == 'cublas_f16':
            t[(r['shape'], k.split(':', 1)[1] if ':' in k else k)].append(float(r['us']))
for k in sorted(t): print('%-18s %-44s %s' % (k[0], k[1], ' '.join('%.2f' % v for v in sorted(t[k]))))
PY
