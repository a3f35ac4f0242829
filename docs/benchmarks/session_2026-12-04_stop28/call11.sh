#!/usr/bin/env bash
# Session 2026-12-04 stop 28, call 11: does the 8-column reduce cost the small-T paths? w4a16_bench_moe at T = 1, 4, 16,
# 64, 256: new (main 47cae73, reduce8 everywhere) / old (call 8's binary: the scalar reduce) / new / old.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s28; mkdir -p $W
tar -xJf .carry-s28/bins11.tar.xz -C $W
for r in new_r1 old_r1 new_r2 old_r2; do
  b=${r%_r*}
  timeout 60 $W/$b/w4a16_bench_moe $OUT/call11_$r.csv 1,4,16,64,256 > /dev/null 2>&1; echo "$r rc=$?"
done
for f in call11_new_r1 call11_old_r1 call11_new_r2 call11_old_r2; do echo "== $f"; grep -E "chosen" $OUT/$f.csv | cut -d, -f1-3,6,8; done
echo "total $(($(date +%s)-T0)) s"
