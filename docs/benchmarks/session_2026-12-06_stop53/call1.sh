#!/usr/bin/env bash
# Stop 53 call 1 (carry .carry-s52c4: stop 52's final build, w4a16_test_gpu_registry + w4a16_bench_gpu, Release sm_90a):
# (a) stop 52's call7.sh (the uint4 hybrid on the six large layers, M = 1..32, fp16 / bf16);
# (b) stop 52's next_profile.sh trimmed to four cases (uint4b8 against uint4: 8192x8192 M = 64, llama8b.gate_up M = 1024),
#     each ncu capped at 90 s.
. scripts/lib/device-env.sh
# part (a) runs only on an H200 (PART_A=0 skips it); part (b) on either card.
if [ "${PART_A:-1}" = 1 ]; then
  bash docs/benchmarks/session_2026-12-06_stop52/call7.sh
  mkdir -p $OUT/a && mv $OUT/gpu.txt $OUT/summary.txt $OUT/data.tar.gz $OUT/a/ 2>/dev/null
else
  mkdir -p /tmp/s52c4b && tar -xJf .carry-s52c4/b.tar.xz -C /tmp/s52c4b
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
fi
B=/tmp/s52c4b; W=/tmp/s53prof; rm -rf $W; mkdir -p $W; LOG=$OUT/profile.log; : > $LOG
for c in 8192x8192:64:uint4b8 8192x8192:64:uint4 llama8b.gate_up:1024:uint4b8 llama8b.gate_up:1024:uint4; do
  IFS=: read s m f <<< "$c"; tag=${s}_m${m}_$f
  timeout 90 ncu --clock-control none --kernel-name regex:'prefill_kernel' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters \
    --export $W/$tag $B/w4a16_bench_gpu --registry cuda_prefill --shapes $s --ms $m --dtypes f16 --scalars $f \
    --no-extra-groups --no-cublas --decode-max-m 1 --csv $W/$tag.bench.csv > $W/$tag.run.txt 2>&1 || echo "ncu rc=$? $tag" >> $LOG
  ncu --import $W/$tag.ncu-rep --page details > $W/$tag.details.txt 2>&1
  ncu --import $W/$tag.ncu-rep --page source --csv --print-source sass > $W/$tag.source.csv 2>&1
  { echo "== $tag"; grep -E "Duration|DRAM Throughput|Issued Warp|No Eligible|Warp Cycles Per Issued|Registers Per|Block Limit Shared|Dynamic Shared|Achieved Active|Grid Size|Block Size" $W/$tag.details.txt | head -24
    python3 docs/benchmarks/session_2026-12-06_stop53/stalls.py $W/$tag.source.csv; } >> $LOG
  tar -czf $OUT/profile.tar.gz -C $W $(cd $W && ls | grep -v ncu-rep)
done
cat $LOG
