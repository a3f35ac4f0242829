#!/usr/bin/env bash
# Stop 53 call 4: the 16-token tiles' one-group kernels (g >= 64) with the scale in the fp32 accumulators (per-tile
# partial sums, acc += s * partial once the group retired) instead of 4 hmul2 per layout word: c4 = config 36 (64 rows
# x 16 tokens) only, c4b = config 35 (128 rows, 144-164 registers: 3 CTAs per SM) too. Carries from prepare4.sh
# (.carry-s53c4, .carry-s53c4b) and prepare.sh (.carry-s53base: the kernels before).
#  A. prefill and MoE GPU tests of both new builds (in parallel);
#  B. A/B base / c4 / c4b, twice: the prefill path (registry cuda_prefill), six large layers, M = 9 / 12 / 16,
#     fp16 / bf16 x uint4b8 / uint4 (M = 32 as the control: configs 37 / 38, unchanged);
#  C. MoE Qwen3-30B-A3B fp16 uint4b8 / uint4 T = 64 / 192 (T = 192: grouped block 16 = config 35), base / c4b twice.
. scripts/lib/device-env.sh
S=/tmp/s53c4; rm -rf $S; mkdir -p $S/a $S/b $S/c
for v in base c4 c4b; do mkdir -p /tmp/s53$v && tar -xJf .carry-s53$v/b.tar.xz -C /tmp/s53$v; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
arch() { tar -czf $OUT/data.tar.gz -C $S .; }
pids=(); names=()
for v in c4 c4b; do for t in prefill_gpu_test w4a16_test_gpu_moe; do
  timeout 200 /tmp/s53$v/$t > $S/a/${v}_$t.log 2>&1 & pids+=($!); names+=(${v}_$t)
done; done
for i in "${!pids[@]}"; do
  wait ${pids[$i]}; echo "${names[$i]} rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/a/${names[$i]}.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
done
grep -h -B3 -A8 "Failure" $S/a/*.log | head -40 | tee -a $OUT/gpu.txt
echo "A done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
P="--registry cuda_prefill --no-extra-groups --decode-max-m 1 --no-cublas --shapes $SH"
for r in 1 2; do for v in base c4 c4b; do
  timeout 80 /tmp/s53$v/w4a16_bench_gpu $P --ms 9,12,16,32 --dtypes f16,bf16 --scalars uint4b8,uint4 --csv $S/b/${v}_$r.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? b $v $r" | tee -a $OUT/gpu.txt
done; done
for v in c4 c4b; do
  echo "### base -> $v" >> $S/b/compare.md
  python3 bench/gpu/ab_compare.py $S/b/base_1.csv,$S/b/base_2.csv $S/b/${v}_1.csv,$S/b/${v}_2.csv >> $S/b/compare.md 2>&1
done
cp $S/b/compare.md $OUT/summary_b.txt; tail -100 $OUT/summary_b.txt
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
for r in 1 2; do for v in base c4b; do for f in uint4b8 uint4; do
  W4A16_BENCH_MOE_PATHS=chosen timeout 40 /tmp/s53$v/w4a16_bench_moe $S/c/${v}_${f}_$r.csv 64,192 f16 $f > $S/c/${v}_$r.log 2>&1 || echo "rc=$? moe $v $f $r" | tee -a $OUT/gpu.txt
done; done; done
python3 - $S/c <<'PY' | tee $OUT/summary_c.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    v, f, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        t[(f, int(row['T']), row['block'])][v].append(float(row['fused_us']))
for k in sorted(t):
    b, n = t[k]['base'], t[k]['c4b']
    if b and n: print('f16 %-7s T=%-4d block %-4s base %s new %s  new/base %.3f' % (k[0], k[1], k[2], b, n, min(n) / min(b)))
PY
echo "C done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
