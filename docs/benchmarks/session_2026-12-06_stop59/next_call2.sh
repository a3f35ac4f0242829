#!/usr/bin/env bash
# Prepared for the next session (carry .carry-t60 = prefill_bench of branch prefill-trace2 = main e8f4a01 + the
# per-item trace, stripped; `git checkout prefill-trace2 && ninja -C build prefill_bench`, strip, XZ_OPT="-9e -T2"
# tar -cJf .carry-t60/b.tar.xz, then back to main and rebuild): what is left of the persistent loop's item boundary
# with the next item decoded early (stop 59 call 5b before it: loads issued 0.74 us after an item's end, epilogue done
# 1.82, next k loop 2.08), each layer with KernelParams::next_info on and off, eager launches, no interleaving. The
# trace build spills 4 bytes in the bm256 kernels (one STL / LDL outside the k loop), the main build in its g = 32 ones.
set -u
. scripts/lib/device-env.sh
S=/tmp/s60c2; rm -rf $S; mkdir -p $S/b && tar -xJf .carry-t60/b.tar.xz -C $S/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
for ni in 1 0; do
  for sm in llama8b.gate_up:1024 llama8b.down:4096; do
    W4A16_PREFILL_NEXT_INFO=$ni W4A16_PREFILL_TRACE=$S/trace_${sm%%:*}_${sm##*:}_n$ni.txt W4A16_PREFILL_TUNE_SHAPES=${sm%%:*} \
      W4A16_PREFILL_TUNE_MS=${sm##*:} W4A16_PREFILL_TUNE_CONFIGS=20 W4A16_PREFILL_TUNE_SPLITS=1 \
      timeout 60 $S/b/prefill_bench $S/tr_$ni.csv tune_tma > $S/tr_${sm%%:*}_$ni.log 2>&1 || echo "rc=$? trace $ni $sm" | tee -a $OUT/gpu.txt
  done
done
python3 docs/benchmarks/session_2026-12-06_stop59/trace_an2.py $S/trace_*.txt | tee $OUT/trace_summary.txt
tar -czf $OUT/data.tar.gz -C $S --exclude=b .
