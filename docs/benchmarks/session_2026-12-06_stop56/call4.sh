#!/usr/bin/env bash
# Stop 56 call 4 (carry .carry-s56c2, prefill_bench of main 30bd9e2): every TMA tile x split 1..8 interleaved with the
# default plan and cuBLAS fp16 (shuffled, clock probe on) where M = 256 missed cuBLAS in stop 54 / 55 (llama8b.qkv,
# qwen0.5b.gate_up, qwen0.5b.qkv) and on llama8b.qkv M = 1024 (the row split, 0.92x interleaved).
set -u
. scripts/lib/device-env.sh
S=/tmp/s56c4; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-s56c2/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
for sm in "llama8b.qkv,qwen0.5b.gate_up,qwen0.5b.qkv:224,256" "llama8b.qkv:1024"; do
  W4A16_TIMER_CLOCK=1 W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_INTERLEAVE=16 \
    timeout 200 $S/b/prefill_bench $S/tune_${sm##*:}.csv tune_tma > $S/tune_${sm##*:}.log 2>&1 || echo "rc=$? $sm" | tee -a $OUT/gpu.txt
  echo "$sm (${SECONDS}s)" | tee -a $OUT/gpu.txt
done
python3 scripts/prefill-ab/il_table.py $S/tune_*.csv > $OUT/il_table.txt
for f in $S/tune_*.csv; do python3 - "$f" <<'PY' | tee -a $OUT/gpu.txt
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0].endswith('_il') or (r and r[0] == 'cuda_prefill_il')]
by = collections.defaultdict(list)
for r in rows: by[(r[1], r[4])].append((float(r[9]), r[0], r[8]))
for key, v in by.items():
    v.sort(); cub = [t for t, n, p in v if n == 'cublas_f16_il'][0]; de = [t for t, n, p in v if n == 'cuda_prefill_il'][0]
    print(key, 'cublas', cub, 'default', de, round(cub / de, 3), '| best:', *[f'{n} {t} {round(cub / t, 3)}' for t, n, p in v[:4]])
PY
done
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
