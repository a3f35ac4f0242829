#!/usr/bin/env bash
# Stop 51 call 4: HEAD (carry CARRY=.carry-s51c4 prepare2.sh). The hybrid's new switch in bf16 (set from fp16 runs): the
# hybrid (registry cuda_hybrid) and prefill path at M = 1..32 on the six large layers (uint4b8) and M = 8 / 9 / 16 (uint4),
# decode to 64 and cuBLAS fp16 in the same process; then fp16 M = 4096 on the four llama8b layers (the M >= 1024 target).
. scripts/lib/device-env.sh
S=/tmp/s51c4; rm -rf $S; mkdir -p $S /tmp/s51c4b && tar -xJf .carry-s51c4/b.tar.xz -C /tmp/s51c4b
B=/tmp/s51c4b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
SH=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up
timeout 100 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 1,8,9,12,16,32 \
  --shapes $SH --dtypes bf16 --scalars uint4b8 --csv $S/hyb_bf16_sym.csv > /dev/null 2> $S/err.txt || echo "rc=$? sym" | tee -a $OUT/gpu.txt
timeout 60 $B/w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 64 --ms 8,9,16 \
  --shapes llama8b.qkv,llama8b.o,llama8b.gate_up,llama70b.gate_up --dtypes bf16 --scalars uint4 --csv $S/hyb_bf16_asym.csv > /dev/null 2>> $S/err.txt || echo "rc=$? asym" | tee -a $OUT/gpu.txt
for f in sym asym; do python3 bench/gpu/hybrid_report.py $S/hyb_bf16_$f.csv --markdown > $S/report_$f.md 2>&1; sed -n '1,/^$/p' $S/report_$f.md | tee -a $OUT/summary.txt; done
tar -czf $OUT/data.tar.gz -C $S .
timeout 60 $B/w4a16_bench_gpu --registry cuda_prefill --no-extra-groups --decode-max-m 1 --ms 4096 --shapes llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down \
  --dtypes f16 --scalars uint4b8 --csv $S/m4096.csv > /dev/null 2>> $S/err.txt || echo "rc=$? m4096" | tee -a $OUT/gpu.txt
python3 - $S <<'PY' | tee -a $OUT/summary.txt
import csv, os, sys, collections
for name in ('hyb_bf16_sym.csv', 'hyb_bf16_asym.csv', 'm4096.csv'):
    p = os.path.join(sys.argv[1], name)
    if not os.path.exists(p): continue
    t = collections.defaultdict(dict)
    for r in csv.DictReader(open(p)):
        t[(r['shape'], r['format'] if r['format'] != 'dense' else '', int(r['m']))][r['kernel']] = float(r['us'])
    for k in sorted(t):
        print(name[:-4], k[0], k[1], k[2], ' | '.join('%s %.2f' % (n, u) for n, u in sorted(t[k].items(), key=lambda x: x[1])))
PY
tar -czf $OUT/data.tar.gz -C $S .
