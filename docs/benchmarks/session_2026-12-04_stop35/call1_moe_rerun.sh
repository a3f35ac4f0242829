#!/usr/bin/env bash
# Run in stop 38 (2026-12-05): call1.sh's MoE part again. In call1.sh scripts/moe-ab stopped silently on the device:
# scripts/lib/device-env.sh ended on a false test (a library folder absent there) and moe-ab runs under set -e.
T0=$(date +%s)
W=/tmp/s35c1; mkdir -p $W/out && tar -xJf .carry-s35/bins1.tar.xz -C $W
for kind in f16:uint4b8 bf16:uint4b8 f16:uint4 bf16:uint4; do
  act=${kind%%:*} st=${kind#*:}
  bash scripts/moe-ab $W/out/moe_${act}${st} 3 4,16,64 $act $st base=$W/base/w4a16_bench_moe new=$W/newa/w4a16_bench_moe \
    > $W/out/ab_moe_${act}${st}.md 2>&1
  echo "== MoE $act $st t=$(($(date +%s)-T0))"; grep -v "round .* done" $W/out/ab_moe_${act}${st}.md
done
tar -czf $OUT/moe.tar.gz -C $W/out .
