#!/usr/bin/env bash
# Stop 74 call 3 (carry .carry-l74a: main's w4a16_bench_gpu at 255c342). Any card.
# Does a one-round bulk plan at 1..8 tokens gain from fitting twice per SM (the next call's blocks then become resident
# beside it under programmatic dependent launch)? Call 2 on an H100: llama8b.o uint4 at 4 tokens, 4 stages in 115968
# bytes (too large to fit twice), 5.88 us; uint4b8, 4 stages in 114944 (fits twice), 4.89 us; main's 112384, 4.83 us.
# Per one-round layer: the default plan (D) against the same stripes forced at two blocks per SM (H: the ring cut to half
# the SM's shared memory; the grid is the same, one item per block), M = 1, 2, 4, 6, 8, fp16, uint4b8 / uint4, g = 128,
# 2 interleaved rounds, every row against f64.
set -u
. scripts/lib/device-env.sh
S=/tmp/s74c; rm -rf $S; mkdir -p $S/b $S/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
tar -xJf .carry-l74a/b.tar.xz -C $S/b ./w4a16_bench_gpu
log() { echo "$1 (${SECONDS}s)" | tee -a $OUT/gpu.txt; }
COMMON="--ms 1,2,4,6,8 --dtypes f16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16"
for r in 1 2; do
  for sw in llama8b.o:2 llama8b.qkv:4 8192x8192:4 llama8b.down:2 qwen0.5b.down:1 qwen0.5b.gate_up:8; do
    sh=${sw%:*}; wn=${sw#*:}
    timeout 40 $S/b/w4a16_bench_gpu --shapes $sh $COMMON --csv $S/r/D_${sh}_$r.csv > /dev/null 2>&1 || log "D $sh rc=$?"
    W4A16_DECODE_BULK_PLAN=$wn,2 timeout 40 $S/b/w4a16_bench_gpu --shapes $sh $COMMON --csv $S/r/H_${sh}_$r.csv > /dev/null 2>&1 || log "H $sh rc=$?"
  done
  log "round $r"
done
echo "### old: D (default), new: H (the same stripes at two blocks per SM)" > $OUT/ab.md
python3 bench/gpu/ab_compare.py $(ls $S/r/D_*.csv | paste -sd,) $(ls $S/r/H_*.csv | paste -sd,) >> $OUT/ab.md 2>&1
cat $S/r/*_1.csv | grep -v "^kernel" | cut -d, -f2,5,7,9,16 | sort > $OUT/plans.txt
grep -E "rows; old/new" $OUT/ab.md
