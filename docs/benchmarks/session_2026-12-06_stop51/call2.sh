#!/usr/bin/env bash
# Stop 51 call 2: main with MoE blocks 16 / 32 on the grouped path and the two gate_up layers' new hybrid switch
# (carry .carry-s51c2 from prepare2.sh: the GPU test binaries, w4a16_bench_gpu, w4a16_bench_moe of HEAD).
#  A. every GPU test binary (prefill, registry, decode, MoE; in parallel, 170 s each at most); prefill's full run prints
#     the resident clusters per tile and split (AutomaticReduceTakesTheModeOfTheSmallerEstimate).
#  B. the hybrid (registry cuda_hybrid) and the prefill path over every PERF.md shape, fp16: uint4b8 at M = 1..1024,
#     uint4 at 8..32, decode up to 64 and cuBLAS fp16 in the same process; bench/gpu/hybrid_report.py on each.
#  C. MoE Qwen3-30B-A3B fp16 uint4b8: the chosen block and blocks 8 / 16 / 32 forced, T = 128..512 (one process each);
#     bf16 uint4 at T = 192 / 256 / 384 with every path (forced rows, mma32 included).
#  D. tune_tma at M = 16 on the six large layers: the 16-token tiles (35, 36) at splits 1 / 2 / 4 / 8 against the default.
. scripts/lib/device-env.sh
S=/tmp/s51c2; rm -rf $S; mkdir -p $S/a $S/b $S/c $S/d /tmp/s51c2b && tar -xJf .carry-s51c2/b.tar.xz -C /tmp/s51c2b
B=/tmp/s51c2b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
arch() { tar -czf $OUT/data.tar.gz -C $S .; }
pids=(); names=()
for t in $B/*test*; do
  timeout 170 $t > $S/a/$(basename $t).log 2>&1 & pids+=($!); names+=($(basename $t))
done
for i in "${!pids[@]}"; do
  wait ${pids[$i]}; echo "${names[$i]} rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/a/${names[$i]}.log | tr '\n' ' ')" | tee -a $OUT/gpu.txt
done
grep -h -B3 -A8 "Failure" $S/a/*.log | head -40 | tee -a $OUT/gpu.txt
grep -h "resident clusters" $S/a/prefill_gpu_test.log | grep -E "bm16|bm32" | tee -a $OUT/gpu.txt
echo "A done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up,qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down
timeout 150 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,4,8,9,12,16,32,64,256,1024 \
  --dtypes f16 --scalars uint4b8 --csv $S/b/hyb_sym.csv > /dev/null 2> $S/b/err.txt || echo "rc=$? sym" | tee -a $OUT/gpu.txt
timeout 60 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 8,9,16,32 \
  --dtypes f16 --scalars uint4 --csv $S/b/hyb_asym.csv > /dev/null 2>> $S/b/err.txt || echo "rc=$? asym" | tee -a $OUT/gpu.txt
for f in sym asym; do python3 bench/gpu/hybrid_report.py $S/b/hyb_$f.csv --markdown > $S/b/report_$f.md 2>&1; sed -n '1,/^$/p' $S/b/report_$f.md | tee -a $OUT/summary_b.txt; done
echo "B done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
for blk in chosen 8 16 32; do
  env $([ $blk != chosen ] && echo W4A16_BENCH_MOE_BLOCK=$blk) W4A16_BENCH_MOE_PATHS=chosen \
    timeout 60 $B/w4a16_bench_moe $S/c/b$blk.csv 128,144,160,176,192,208,224,240,256,320,384,512 f16 uint4b8 > $S/c/b$blk.log 2>&1 || { echo "rc=$? moe $blk"; tail -3 $S/c/b$blk.log; }
done
timeout 90 $B/w4a16_bench_moe $S/c/all_bf16_uint4.csv 192,256,384 bf16 uint4 > $S/c/all.log 2>&1 || { echo "rc=$? moe all"; tail -3 $S/c/all.log; }
python3 - $S/c <<'PY' | tee $OUT/summary_c.txt
import csv, glob, os, sys, collections
t = collections.defaultdict(dict)
for p in sorted(glob.glob(os.path.join(sys.argv[1], 'b*.csv'))):
    for r in csv.DictReader(open(p)):
        t[int(r['T'])][os.path.basename(p)[:-4]] = (float(r['fused_us']), r['block'], r['rel_err_vs_cublas'])
for T in sorted(t):
    d = t[T]
    print('T=%-4d ' % T + ' | '.join('%s(b%s) %.1f e%s' % (n, v[1], v[0], v[2][:7]) for n, v in sorted(d.items(), key=lambda x: x[1][0])))
for r in csv.DictReader(open(os.path.join(sys.argv[1], 'all_bf16_uint4.csv'))):
    print('bf16 uint4 T=%s block %s %-12s %9s us  cublas %9s  err %s' % (r['T'], r['block'], r['path'], r['fused_us'], r['cublas_loop_us'], r['rel_err_vs_cublas']))
PY
echo "C done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
W4A16_PREFILL_TUNE_MS=16 W4A16_PREFILL_TUNE_CONFIGS=35,36 W4A16_PREFILL_TUNE_SPLITS=1,2,4,8 \
  W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama70b.gate_up,llama8b.o \
  timeout 120 $B/prefill_bench $S/d/t16.csv tune_tma > $S/d/t16.log 2>&1 || { echo "rc=$? tune"; tail -3 $S/d/t16.log; }
python3 - $S/d/t16.csv <<'PY' | tee $OUT/summary_d.txt
import csv, sys, collections
t = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    t[r['shape']].append((float(r['us']), r['kernel'].replace('cuda_prefill', 'p').replace('wgmma_', '')[:44], r['plan'][:60] if r['kernel'] == 'cuda_prefill' else ''))
for s in t:
    print(s, ' | '.join('%s %.2f %s' % (k, u, p) for u, k, p in sorted(t[s])[:6]))
PY
echo "D done (${SECONDS}s)" | tee -a $OUT/gpu.txt; arch
