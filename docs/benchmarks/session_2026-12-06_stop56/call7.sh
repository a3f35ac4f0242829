#!/usr/bin/env bash
# Stop 56 call 7 (carry .carry-s56c7: prefill_bench of main with W4A16_PREFILL_TUNE_DTYPE): issue 5's M >= 1024 row in
# bf16 (uint4b8 g = 128), the default plan interleaved with cuBLAS bf16 and fp16 (shuffled, clock probe on), one process,
# on the >= 8 MB PERF.md layers at M = 1024 / 4096 (bf16 last measured there in stop 27).
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c7; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56c7/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_DTYPE=bf16 W4A16_PREFILL_TUNE_MS=1024,4096 W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
W4A16_PREFILL_TUNE_SHAPES=8192x8192,llama8b.gate_up,llama8b.down,llama8b.qkv,llama8b.o,llama70b.gate_up W4A16_PREFILL_INTERLEAVE=16 \
  timeout 240 $S/b/prefill_bench $S/bf16.csv tune_tma > $S/bf16.log 2>&1 || echo "rc=$?" | tee -a $OUT/gpu.txt
echo "done (${SECONDS}s)" | tee -a $OUT/gpu.txt
python3 - $S/bf16.csv <<'PY' | tee -a $OUT/gpu.txt
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))[1:]
by = collections.defaultdict(dict)
for r in rows: by[(r[1], int(r[4]))][r[0]] = (float(r[9]), r[14])
for key in sorted(by):
    d = by[key]; g = lambda n: d.get(n, (float('nan'), ''))[0]
    print(f"{key[0]:18s} M={key[1]:5d} il: bf16 cuBLAS {g('cublas_bf16_il'):8.1f} fp16 cuBLAS {g('cublas_f16_il'):8.1f} ours {g('cuda_prefill_il'):8.1f}"
          f" -> x cuBLAS bf16 {g('cublas_bf16_il') / g('cuda_prefill_il'):.3f} | alone: bf16 cuBLAS {g('cublas_bf16'):8.1f} ours {g('cuda_prefill'):8.1f}"
          f" -> {g('cublas_bf16') / g('cuda_prefill'):.3f} (rel_err {d.get('cuda_prefill', (0, '?'))[1]})")
PY
grep "^clock" $S/bf16.log | grep "_il" > $OUT/clock_il.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
