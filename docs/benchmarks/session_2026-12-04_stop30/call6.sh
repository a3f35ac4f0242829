#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 6: is the bulk kernel's producer held up by its per-stage cp.async.mbarrier.arrive.noinc?
# 1. arrive_probe (arrive_probe.cu, one warp): cycles per iteration of a 16-byte cp.async from a cold line, alone, with an
# arrive.noinc after it, with a commit_group after it; 2. a timing-only build of the bulk kernel whose scale / zero copies
# skip their arrival (W4A16_DECODE_BULK_PROBE=1: consumers may read scales before they land, so rows may fail the f64
# check; the time is the bound of removing that wait) against the same build without it, the bulk kernel forced, 10 PERF.md
# shapes x M = 1, 2, 4, 8 x fp16 (uint4b8 g128), 2 rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c6; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins6.tar.xz -C .gpu/bin
B=.gpu/bin
timeout 60 $B/arrive_probe > $W/out/arrive_probe.txt 2>&1; echo "probe rc=$?"; cat $W/out/arrive_probe.txt
ARGS=(--ms 1,2,4,8 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16)
for r in 1 2; do
  W4A16_DECODE_BULK=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/base_$r.csv > /dev/null 2>&1; echo "base r$r rc=$?"
  W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_PROBE=1 timeout 90 $B/w4a16_bench_gpu "${ARGS[@]}" --csv $W/out/probe_$r.csv > /dev/null 2>&1; echo "probe r$r rc=$? t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/base_1.csv,$W/out/base_2.csv $W/out/probe_1.csv,$W/out/probe_2.csv > $W/out/ab_probe.md 2>&1; tail -1 $W/out/ab_probe.md
tar -czf $OUT/call6.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
