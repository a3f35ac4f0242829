#!/usr/bin/env bash
# Stop 47, call 2 (H200): branch lean-zeros (2dec34f: the uint4 zero constants by zeros_of, the MoE ring's FastDiv)
# against main (9ff3099). The branch's decode and MoE GPU tests first, then whole-process A/B, rounds interleaved:
# the MoE layer (scripts/moe-ab, 3 rounds, Qwen3-30B-A3B, T = 1, 4, 16, 64, fp16 / bf16 x uint4 / uint4b8) and the linear
# decode (w4a16_bench_gpu, 2 rounds, uint4 and uint4b8 rows, M = 1, 4, 8, 16, every row against f64).
# Carries: .carry-s47b/ab.tar.xz (old/ = main's w4a16_bench_moe + w4a16_bench_gpu; new/ = the branch's, + its
# w4a16_test_gpu_decode / w4a16_test_gpu_moe).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s47c2_out; mkdir -p $O; trap 'tar -czf $R/call2.tar.gz -C $O .' EXIT
W=/tmp/s47c2; rm -rf $W; mkdir -p $W && tar -xJf .carry-s47b/ab.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $O/gpu.txt
for t in decode moe; do timeout 200 $W/new/w4a16_test_gpu_$t --gtest_brief=1 > $O/test_$t.log 2>&1 & done
wait
for t in decode moe; do echo "$t: $(grep -E '^\[  (PASSED|FAILED)' $O/test_$t.log | tr '\n' ' ')"; done
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
  echo "decode $side $r t=$(($(date +%s)-T0))"
done; done
python3 bench/gpu/ab_compare.py $O/dec_old_1.csv,$O/dec_old_2.csv $O/dec_new_1.csv,$O/dec_new_2.csv > $O/ab_decode.md 2>&1
head -80 $O/ab_decode.md
echo "done t=$(($(date +%s)-T0))"
