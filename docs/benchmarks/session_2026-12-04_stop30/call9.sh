#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 9 (main 9b08bce, carried as .carry/gpu.tar.xz by scripts/pack-gpu): every GPU test binary
# through scripts/gpu-check (tests only: no sanitizer, sweep, MoE bench, read ceiling or peers), then the rule's 2-token
# clause for llama70b.gate_up (host-verified only): the default against W4A16_DECODE_BULK=0 at M = 2 x fp16 / bf16 x
# uint4b8 / uint4, 3 rounds interleaved.
T0=$(date +%s)
W=/tmp/s30c9; mkdir -p $W/out
W4A16_SKIP_PEERS=1 W4A16_SKIP_SANITIZER=1 W4A16_SKIP_SWEEP=1 W4A16_SKIP_MOE=1 W4A16_SKIP_READ=1 OUT=$W/out timeout 380 bash scripts/gpu-check > $W/out/gpu_check_stdout.log 2>&1
echo "gpu-check rc=$? t=$(($(date +%s)-T0))"; grep -E "^== " $W/out/gpu-check.log | tail -25
. scripts/lib/device-env.sh
ARGS=(--shapes llama70b.gate_up --ms 2 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2 3; do
  W4A16_DECODE_BULK=0 timeout 60 .gpu/bin/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/m2_off_$r.csv > /dev/null 2>&1
  timeout 60 .gpu/bin/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/m2_new_$r.csv > /dev/null 2>&1
done
python3 bench/gpu/ab_compare.py $(ls $W/out/m2_off_*.csv | paste -sd,) $(ls $W/out/m2_new_*.csv | paste -sd,) > $W/out/m2_ab.md 2>&1; cat $W/out/m2_ab.md | tail -6
tar -czf $OUT/call9.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
