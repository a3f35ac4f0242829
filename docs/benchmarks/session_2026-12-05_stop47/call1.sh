#!/usr/bin/env bash
# Stop 47, call 1 (H200): main's final build of stop 46 (9ff3099) checked whole: every GPU test binary and pytest with
# CUDA at once (correctness only; includes stop 46's unrun Decode.BulkRejectsBadKnobs assertion), then the hybrid
# against both of its paths over every PERF.md shape (scripts/hybrid-check, fp16 then bf16: uint4b8 at M = 1..4096,
# uint4 at M = 1..1024, every row against f64, bench/gpu/hybrid_report.py on each).
# Carries: .carry-s47/g1.tar.xz (the four GPU test binaries, w4a16_bench_gpu, w4a16_bench_moe), py.tar.xz (the package with CUDA).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s47c1_out; mkdir -p $O; trap 'tar -czf $R/call1.tar.gz -C $O .' EXIT
rm -rf .gpu && mkdir -p .gpu && for f in g1 py; do tar -xJf .carry-s47/$f.tar.xz -C .gpu; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $O/gpu.txt

pids=()
for t in .gpu/bin/*test*; do timeout 200 $t --gtest_brief=1 > $O/test_$(basename $t).log 2>&1 & pids+=($!); done
PYTHONPATH=.gpu/py timeout 240 python3 -m pytest -q -p no:cacheprovider python/tests > $O/pytest_gpu.log 2>&1
wait
for t in .gpu/bin/*test*; do echo "$(basename $t): $(grep -E '^\[  (PASSED|FAILED|SKIPPED)|tests ran' $O/test_$(basename $t).log | tr '\n' ' ')"; done | tee $O/tests.txt
grep -h -E "^\[  FAILED  \]" $O/test_*.log | head -20
grep -E "^FAILED|passed|failed" $O/pytest_gpu.log | tail -5; echo "tests t=$(($(date +%s)-T0))"
for dt in f16 bf16; do
  mkdir -p $O/$dt && HYBRID_SKIP_TESTS=1 HYBRID_DTYPE=$dt OUT=$O/$dt bash scripts/hybrid-check
  grep -v "^==" $O/$dt/final.log | head -40
done
echo "done t=$(($(date +%s)-T0))"
