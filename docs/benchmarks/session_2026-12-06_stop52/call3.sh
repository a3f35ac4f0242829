#!/usr/bin/env bash
# Stop 52 call 3: the prefill W slot's aux word (scale pairs and zero words in one ld.shared; ONE_GROUP kernels' slots
# as call 2 for uint4 (its ONE_GROUP slots 24 bytes a thread and block, as uint4b8's: config 35 50.3 KB, 4 CTAs per SM);
# uint4b8's ONE_GROUP kernels now exactly as before (call 2 shrank them: the launch-time reduce choice, which counts the
# kernel's resident clusters, moved and llama8b.gate_up M = 32 / 1024 and llama8b.qkv M = 32 ran 1.1-1.35x slower).
# Carry .carry-s52c3 (prepare2.sh of this commit less the decode test and prefill_bench, xz -9e: the 64 MiB limit)
# and .carry-s52old (cc6e50a's w4a16_bench_gpu / w4a16_bench_moe, from .carry-s51c4).
#  A. GPU tests of the new build: prefill, MoE (the grouped path runs configs 35 / 38), registry, in parallel.
#  B. A/B old / new / old / new: the prefill path (registry cuda_prefill) on the six large layers, fp16, uint4 and
#     uint4b8, M = 16 / 32 / 64 / 256 / 1024; bf16 uint4 M = 16 / 64.
#  C. MoE Qwen3-30B-A3B uint4 fp16 / bf16, T = 192 / 256 / 384 (grouped blocks 16 / 32), old / new / old / new.
#  D. the new build's hybrid and both paths, uint4 fp16 / bf16, M = 8..32 (does the uint4 switch move?).
. scripts/lib/device-env.sh
S=/tmp/s52c3; rm -rf $S; mkdir -p $S/a $S/b $S/c $S/d /tmp/s52new /tmp/s52old
tar -xJf .carry-s52c3/b.tar.xz -C /tmp/s52new && tar -xJf .carry-s52old/b.tar.xz -C /tmp/s52old
N=/tmp/s52new; O=/tmp/s52old
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
arch() { tar -czf $OUT/data.tar.gz -C $S .; }
pids=(); names=()
for t in prefill_gpu_test w4a16_test_gpu_moe w4a16_test_gpu_registry; do
  timeout 170 $N/$t > $S/a/$t.log 2>&1 & pids+=($!); names+=($t)
done
for i in "${!pids[@]}"; do
  wait ${pids[$i]}; echo "${names[$i]} rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/a/${names[$i]}.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
done
grep -h -B3 -A8 "Failure" $S/a/*.log | head -40 | tee -a $OUT/gpu.txt
echo "A done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
for r in 1 2; do for side in old new; do
  B=$O; [ $side = new ] && B=$N
  timeout 100 $B/w4a16_bench_gpu --registry cuda_prefill --no-extra-groups --decode-max-m 1 --no-cublas --ms 16,32,64,256,1024 \
    --shapes $SH --dtypes f16 --scalars uint4,uint4b8 --csv $S/b/${side}_$r.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? b $side $r" | tee -a $OUT/gpu.txt
  timeout 40 $B/w4a16_bench_gpu --registry cuda_prefill --no-extra-groups --decode-max-m 1 --no-cublas --ms 16,64 \
    --shapes $SH --dtypes bf16 --scalars uint4 --csv $S/b/${side}_bf16_$r.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? b bf16 $side $r" | tee -a $OUT/gpu.txt
done; done
python3 bench/gpu/ab_compare.py $S/b/old_1.csv,$S/b/old_2.csv,$S/b/old_bf16_1.csv,$S/b/old_bf16_2.csv \
  $S/b/new_1.csv,$S/b/new_2.csv,$S/b/new_bf16_1.csv,$S/b/new_bf16_2.csv > $S/b/compare.md 2>&1
cat $S/b/compare.md | tee $OUT/summary_b.txt | tail -80
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
for r in 1 2; do for side in old new; do
  B=$O; [ $side = new ] && B=$N
  for dt in f16 bf16; do
    W4A16_BENCH_MOE_PATHS=chosen timeout 40 $B/w4a16_bench_moe $S/c/${side}_${dt}_$r.csv 64,192,256,384 $dt uint4 > $S/c/${side}_${dt}_$r.log 2>&1 || echo "rc=$? moe $side $dt $r" | tee -a $OUT/gpu.txt
  done
done; done
python3 - $S/c <<'PY' | tee $OUT/summary_c.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.csv'))):
    side, dt, r = os.path.basename(p)[:-4].split('_')
    for row in csv.DictReader(open(p)):
        t[(dt, int(row['T']), row['block'])][side].append(float(row['fused_us']))
for k in sorted(t):
    o, n = t[k]['old'], t[k]['new']
    if o and n: print('%s uint4 T=%-4d block %-4s old %s new %s  new/old %.3f' % (k[0], k[1], k[2], o, n, min(n) / min(o)))
PY
echo "C done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
timeout 90 $N/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 8,9,10,12,14,16,32 \
  --shapes $SH --dtypes f16,bf16 --scalars uint4 --csv $S/d/hyb_asym.csv > /dev/null 2> $S/d/err.txt || echo "rc=$? d" | tee -a $OUT/gpu.txt
python3 - $S/d/hyb_asym.csv <<'PY' | tee $OUT/summary_d.txt
import csv, sys, collections
t = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    if r['format'] == 'dense': continue
    t[(r['shape'], r['dtype'], int(r['m']))][r['kernel'].split()[0]] = float(r['us'])
for k in sorted(t):
    print(k[0], k[1], k[2], ' | '.join('%s %.2f' % kv for kv in sorted(t[k].items(), key=lambda x: x[1])))
PY
echo "D done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
