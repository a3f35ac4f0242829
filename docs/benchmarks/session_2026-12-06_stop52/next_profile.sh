#!/usr/bin/env bash
# Prepared for the next stop (not run here): Nsight Compute on this stop's final build (carry .carry-s52c4, or
# `CARRY=.carry-X bash docs/benchmarks/session_2026-12-06_stop51/prepare2.sh` and change B), uint4b8 against uint4 where
# uint4 still costs 1.2-1.3x: the bm64 tile (8192x8192 M = 64, llama8b.gate_up M = 64) and a large-M tile
# (llama8b.gate_up M = 1024). Same sections and per-instruction stall samples as call1.sh; /tmp/stalls.py-style summary
# (stall reasons and opcodes by samples) printed per case.
. scripts/lib/device-env.sh
mkdir -p /tmp/s52c4b && tar -xJf .carry-s52c4/b.tar.xz -C /tmp/s52c4b; B=/tmp/s52c4b; W=/tmp/s53prof; rm -rf $W; mkdir -p $W
LOG=$OUT/profile.log; : > $LOG
for c in 8192x8192:64:uint4b8 8192x8192:64:uint4 llama8b.gate_up:64:uint4b8 llama8b.gate_up:64:uint4 llama8b.gate_up:1024:uint4b8 llama8b.gate_up:1024:uint4; do
  IFS=: read s m f <<< "$c"; tag=${s}_m${m}_$f
  timeout 150 ncu --clock-control none --kernel-name regex:'prefill_kernel' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters \
    --export $W/$tag $B/w4a16_bench_gpu --registry cuda_prefill --shapes $s --ms $m --dtypes f16 --scalars $f \
    --no-extra-groups --no-cublas --decode-max-m 1 --csv $W/$tag.bench.csv > $W/$tag.run.txt 2>&1 || echo "ncu rc=$? $tag" >> $LOG
  ncu --import $W/$tag.ncu-rep --page details > $W/$tag.details.txt 2>&1
  ncu --import $W/$tag.ncu-rep --page source --csv --print-source sass > $W/$tag.source.csv 2>&1
  { echo "== $tag"; grep -E "Duration|DRAM Throughput|Issued Warp|No Eligible|Warp Cycles Per Issued|Registers Per|Block Limit Shared|Dynamic Shared|Achieved Active" $W/$tag.details.txt | head -20
    python3 - $W/$tag.source.csv <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1]))); hdr = rows[1]; ix = {h: i for i, h in enumerate(hdr)}
tot = collections.Counter(); byop = collections.Counter(); n = 0
for r in rows[2:]:
    s = int(r[ix['Warp Stall Sampling (All Samples)']] or 0); n += s
    src = r[ix['Source']].split(); op = (src[1] if src and src[0].startswith('@') else (src[0] if src else '?')).split('.')[0]
    byop[op] += s
    for h in hdr:
        if h.startswith('stall_') and '(Not' not in h: tot[h] += int(r[ix[h]] or 0)
print('  stalls:', ', '.join('%s %.1f%%' % (k[6:], 100 * v / max(n, 1)) for k, v in tot.most_common(8)))
print('  opcodes:', ', '.join('%s %.1f%%' % (k, 100 * v / max(n, 1)) for k, v in byop.most_common(10)))
PY
  } >> $LOG
  tar -czf $OUT/profile.tar.gz -C $W $(cd $W && ls | grep -v ncu-rep)
done
cat $LOG
