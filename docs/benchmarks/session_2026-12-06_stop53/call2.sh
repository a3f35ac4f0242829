#!/usr/bin/env bash
# Stop 53 call 2: tile t+1's uint4 aux word (e1) or whole slot (e2) read before the wgmma wait in the uint4 ONE_GROUP
# early-issue prefill kernels (call 1's ncu: the first PRMT of the zero word waits on its ld.shared, short-scoreboard
# 14.5-19.2% of samples against uint4b8's 6.9-7.5%). Carries from prepare.sh: .carry-s53base (the default build =
# HEAD's prefill SASS), .carry-s53e1, .carry-s53e2.
#  A. prefill and MoE GPU tests of e1 and e2 (in parallel);
#  B. A/B/C base / e1 / e2, twice: the prefill path (registry cuda_prefill), six large layers, uint4 fp16 M = 16..1024,
#     bf16 M = 16 / 64 / 1024, uint4b8 fp16 M = 64 / 1024 as the control (unchanged kernels);
#  C. MoE Qwen3-30B-A3B uint4 fp16 T = 64 / 192 / 256 / 384, base / e1 / e2 twice.
. scripts/lib/device-env.sh
S=/tmp/s53c2; rm -rf $S; mkdir -p $S/a $S/b $S/c
for v in base e1 e2; do mkdir -p /tmp/s53$v && tar -xJf .carry-s53$v/b.tar.xz -C /tmp/s53$v; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
arch() { tar -czf $OUT/data.tar.gz -C $S .; }
pids=(); names=()
for v in e1 e2; do for t in prefill_gpu_test w4a16_test_gpu_moe; do
  timeout 200 /tmp/s53$v/$t > $S/a/${v}_$t.log 2>&1 & pids+=($!); names+=(${v}_$t)
done; done
for i in "${!pids[@]}"; do
  wait ${pids[$i]}; echo "${names[$i]} rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/a/${names[$i]}.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
done
grep -h -B3 -A8 "Failure" $S/a/*.log | head -40 | tee -a $OUT/gpu.txt
echo "A done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
P="--registry cuda_prefill --no-extra-groups --decode-max-m 1 --no-cublas --shapes $SH"
for r in 1 2; do for v in base e1 e2; do
  B=/tmp/s53$v
  timeout 60 $B/w4a16_bench_gpu $P --ms 16,32,64,256,1024 --dtypes f16 --scalars uint4 --csv $S/b/${v}_u4_$r.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? b $v $r" | tee -a $OUT/gpu.txt
  timeout 40 $B/w4a16_bench_gpu $P --ms 16,64,1024 --dtypes bf16 --scalars uint4 --csv $S/b/${v}_bf16_$r.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? bf16 $v $r" | tee -a $OUT/gpu.txt
  timeout 40 $B/w4a16_bench_gpu $P --ms 64,1024 --dtypes f16 --scalars uint4b8 --csv $S/b/${v}_u4b8_$r.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? u4b8 $v $r" | tee -a $OUT/gpu.txt
done; done
for v in e1 e2; do
  echo "### base -> $v" >> $S/b/compare.md
  python3 bench/gpu/ab_compare.py $(ls $S/b/base_*.csv | paste -sd,) $(ls $S/b/${v}_*.csv | paste -sd,) >> $S/b/compare.md 2>&1
done
cat $S/b/compare.md > $OUT/summary_b.txt; tail -120 $OUT/summary_b.txt
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
for r in 1 2; do for v in base e1 e2; do
  W4A16_BENCH_MOE_PATHS=chosen timeout 40 /tmp/s53$v/w4a16_bench_moe $S/c/${v}_f16_$r.csv 64,192,256,384 f16 uint4 > $S/c/${v}_$r.log 2>&1 || echo "rc=$? moe $v $r" | tee -a $OUT/gpu.txt
done; done
python3 - $S/c <<'PY' | tee $OUT/summary_c.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    v, dt, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        t[(dt, int(row['T']), row['block'])][v].append(float(row['fused_us']))
for k in sorted(t):
    b = min(t[k]['base'])
    print('%s uint4 T=%-4d block %-4s base %s | ' % (k[0], k[1], k[2], t[k]['base']) +
          ' | '.join('%s %s (%.3f)' % (v, t[k][v], min(t[k][v]) / b) for v in ('e1', 'e2') if t[k][v]))
PY
echo "C done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
