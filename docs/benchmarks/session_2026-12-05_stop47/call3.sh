#!/usr/bin/env bash
# Stop 47, call 3 (H200 wanted): main after the merge of lean-zeros (0381645) against stop 46's main (9ff3099).
# The new build's decode, MoE and registry GPU tests; whole-process A/B, rounds interleaved: the MoE layer
# (scripts/moe-ab, 3 rounds, T = 1, 4, 16, 64, fp16 / bf16 x uint4 / uint4b8: the standing of issue 7's T = 1..16 row)
# and the linear decode (w4a16_bench_gpu, 2 rounds, uint4 / uint4b8, M = 1, 4, 8, 16); then the new build's hybrid against
# both paths over every PERF.md shape (fp16 / bf16 x uint4b8 M = 1..4096, uint4 M = 1..1024, bench/gpu/hybrid_report.py).
# Carries: .carry-s47c/ab.tar.xz (old/ = stop 46's w4a16_bench_moe + w4a16_bench_gpu, new/ = this build's + 3 test binaries).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s47c3_out; mkdir -p $O; trap 'tar -czf $R/call3.tar.gz -C $O .' EXIT
W=/tmp/s47c3; rm -rf $W; mkdir -p $W && tar -xJf .carry-s47c/ab.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $O/gpu.txt
for t in decode moe registry; do timeout 200 $W/new/w4a16_test_gpu_$t --gtest_brief=1 > $O/test_$t.log 2>&1 & done
wait
for t in decode moe registry; do echo "$t: $(grep -E '^\[  (PASSED|FAILED)' $O/test_$t.log | tr '\n' ' ')"; done
grep -h -E "^\[  FAILED  \]" $O/test_*.log | head; echo "tests t=$(($(date +%s)-T0))"
for kind in bf16:uint4 f16:uint4 bf16:uint4b8 f16:uint4b8; do
  act=${kind%%:*} st=${kind#*:}
  bash scripts/moe-ab $O/moe_${act}_${st} 3 1,4,16,64 $act $st main=$W/old/w4a16_bench_moe new=$W/new/w4a16_bench_moe \
    > $O/ab_moe_${act}_${st}.md 2>&1
  echo "== MoE $act $st t=$(($(date +%s)-T0))"; grep -v "round .* done" $O/ab_moe_${act}_${st}.md
done
A="--shapes 8192x8192,llama8b.down,llama8b.gate_up,llama8b.o,qwen0.5b.gate_up,llama70b.gate_up --ms 1,4,8,16 --dtypes f16,bf16 --scalars uint4,uint4b8 --no-extra-groups --no-cublas"
for r in 1 2; do for side in old new; do
  timeout 150 $W/$side/w4a16_bench_gpu $A --csv $O/dec_${side}_$r.csv > $O/dec_${side}_$r.log 2>&1 || echo "bench $side rc=$?"
done; done
python3 bench/gpu/ab_compare.py $O/dec_old_1.csv,$O/dec_old_2.csv $O/dec_new_1.csv,$O/dec_new_2.csv > $O/ab_decode.md 2>&1
echo "decode A/B t=$(($(date +%s)-T0))"
python3 - <<'PY'
rows = [l.split('|') for l in open('/tmp/s47c3_out/ab_decode.md') if l.startswith('| cuda_decode')]
for fmt in ('uint4', 'uint4b8'):
    for m in ('1', '4', '8', '16'):
        r = sorted(float(x[9]) for x in rows if x[4].strip() == fmt and x[6].strip() == m)
        if r: print(f"decode {fmt:7s} M={m:2s}: old/new min {r[0]:.3f} median {r[len(r)//2]:.3f} max {r[-1]:.3f} ({len(r)} rows)")
PY
rm -rf .gpu && mkdir -p .gpu && ln -s $W/new .gpu/bin
for dt in f16 bf16; do
  mkdir -p $O/$dt && HYBRID_SKIP_TESTS=1 HYBRID_DTYPE=$dt OUT=$O/$dt bash scripts/hybrid-check
  grep -v "^==" $O/$dt/final.log | head -20
done
echo "done t=$(($(date +%s)-T0))"
