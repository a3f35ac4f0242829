#!/usr/bin/env bash
# Stop 48 call 1 (prepared; run by a later session: this stop got no device). Carry: .carry-s48mc (prepare.sh): mc/ =
# branch prefill-x-multicast's prefill_gpu_test and prefill_bench (its configs 0-34 SASS-identical to main's,
# scripts/sass-diff 41 / 41 per instantiation file, plus the x-multicast configs 35 / 36), dx/ and dwx/ = main's
# prefill_bench built with -DW4A16_DIAG_PREFILL=W4A16_DIAG_NO_X_REFILL (x tiles never reloaded after the prologue) and
# with that and W4A16_DIAG_NO_W_REFILL (neither x nor W reloaded): timing-only builds, wrong results.
#  1. the multicast configs' GPU tests: MulticastConfigsMatchTheirTmaTwinsBitwise first (a hang = a protocol bug: the
#     timeout ends it and the log's last "multicast check" line names the case), then every other prefill GPU test.
#  2. tune_tma, reduce forced to the kernel (the multicast configs have no cluster reduce): bm64 occ2 (23) against its
#     multicast twin (35) at M = 64, splits 1 / 2 / 4, on the four >= 32 MB layers; bm128_bn128 occ2 (32) against 36 at
#     M = 128, splits 2 / 4; and the diagnostic builds' 23 / 32 (what x's traffic and W's cost at most), 2 rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
O=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee $O/gpu.txt
W=/tmp/s48c1; rm -rf $W; mkdir -p $W && tar -xJf .carry-s48mc/bins.tar.xz -C $W
timeout 150 $W/mc/prefill_gpu_test --gtest_brief=1 --gtest_filter='PrefillGpu.MulticastConfigsMatchTheirTmaTwinsBitwise' > $O/test_mc.log 2>&1
rc_mc=$?; echo "multicast test rc=$rc_mc t=$(($(date +%s)-T0))"; grep -E "PASSED|FAILED|Failure|differ" $O/test_mc.log | head; tail -2 $O/test_mc.log
# A failed or hung multicast test: time main's tiles and the diagnostics only (a hang would cost every tune its timeout).
if [ "$rc_mc" = 0 ]; then C64=23,35; C128=32,36; else C64=23; C128=32; echo "multicast configs left out of the tune"; fi
timeout 200 $W/mc/prefill_gpu_test --gtest_brief=1 --gtest_filter='-PrefillGpu.MulticastConfigsMatchTheirTmaTwinsBitwise' > $O/test_rest.log 2>&1
echo "other prefill tests rc=$? t=$(($(date +%s)-T0))"; grep -E "PASSED|FAILED|Failure" $O/test_rest.log | head; tail -1 $O/test_rest.log
tune() {  # binary tag configs round
  W4A16_PREFILL_SPLIT_REDUCE=kernel W4A16_PREFILL_TUNE_MS=64 W4A16_PREFILL_TUNE_SPLITS=1,2,4 W4A16_PREFILL_TUNE_CONFIGS=$3 \
  W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama70b.gate_up \
    timeout 70 $1 $O/t_$2_m64_r$4.csv tune_tma > $W/$2_m64_r$4.log 2>&1 || echo "rc=$? $2 m64 r$4"
  W4A16_PREFILL_SPLIT_REDUCE=kernel W4A16_PREFILL_TUNE_MS=128 W4A16_PREFILL_TUNE_SPLITS=2,4 W4A16_PREFILL_TUNE_CONFIGS=$5 \
  W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up \
    timeout 40 $1 $O/t_$2_m128_r$4.csv tune_tma > $W/$2_m128_r$4.log 2>&1 || echo "rc=$? $2 m128 r$4"
}
for r in 1 2; do
  tune $W/mc/prefill_bench mc $C64 $r $C128
  tune $W/dx/prefill_bench dx 23 $r 32
  tune $W/dwx/prefill_bench dwx 23 $r 32
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 - $O <<'PY' | tee $O/tune.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(list)
for p in glob.glob(os.path.join(sys.argv[1], 't_*.csv')):
    b = os.path.basename(p).split('_')[1]
    for r in csv.DictReader(open(p)):
        k = r['kernel']
        if k.startswith('cuda_prefill:') or k == 'cublas_f16':
            t[(r['shape'], int(r['M']), k.split(':', 1)[1] if ':' in k else k, b)].append(float(r['us']))
def best(key): return min(t[key]) if t.get(key) else float('nan')
print('multicast twin against its tma tile (mc build, same process; reduce kernel), best of 2 rounds:')
for (sh, m, cfg, b) in sorted(t):
    if b != 'mc' or '_tmamc_' not in cfg: continue
    base = cfg.replace('_tmamc_', '_tma_')
    cb = best((sh, m, 'cublas_f16', 'mc'))
    print('%-18s M=%4d %-46s %8.2f us  tma %8.2f  mc/tma %.3f  x cuBLAS %.2f -> %.2f' % (
        sh, m, cfg, best((sh, m, cfg, 'mc')), best((sh, m, base, 'mc')), best((sh, m, cfg, 'mc')) / best((sh, m, base, 'mc')),
        cb / best((sh, m, base, 'mc')), cb / best((sh, m, cfg, 'mc'))))
print('diagnostic bounds (timing only): no x refill (dx), neither x nor W (dwx), over the same tile in the mc build:')
for (sh, m, cfg, b) in sorted(t):
    if b != 'mc' or '_tma_' not in cfg: continue
    base = best((sh, m, cfg, 'mc'))
    print('%-18s M=%4d %-46s %8.2f us  dx %.3f  dwx %.3f' % (sh, m, cfg, base, best((sh, m, cfg, 'dx')) / base, best((sh, m, cfg, 'dwx')) / base))
PY
tar -czf $O/tune_csv.tar.gz -C $O $(cd $O && ls t_*.csv) && rm $O/t_*.csv
echo "total $(($(date +%s)-T0)) s"
