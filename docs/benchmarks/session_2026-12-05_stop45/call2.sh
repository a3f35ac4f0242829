#!/usr/bin/env bash
# Stop 45, call 2 (H200): the top table's re-measure with main's build (c7 = stop 44's final w4a16_bench_gpu, moe =
# stop 44's w4a16_bench_moe): decode M = 1..16 fp16 / bf16 with cuBLAS, the hybrid at M = 64..1024 with cuBLAS fp16,
# the MoE layer at T = 1, 4, 16, 64 (four variants), torch's peers. Carries: .carry-s44/c7.tar.xz, moe.tar.xz.
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s45c2_out; mkdir -p $O; trap 'tar -czf $R/call2.tar.gz -C $O .' EXIT
W=/tmp/s45c2; mkdir -p $W && for f in c7 moe; do tar -xJf .carry-s44/$f.tar.xz -C $W; done
nvidia-smi --query-gpu=name,driver_version,clocks.mem --format=csv,noheader | tee $O/gpu.txt
timeout 150 $W/c7/w4a16_bench_gpu --ms 1,2,4,8,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --decode-max-m 16 \
  --csv $O/sweep.csv > $O/sweep.log 2>&1; echo "sweep rc=$? t=$(($(date +%s)-T0))"
timeout 150 $W/c7/w4a16_bench_gpu --registry cuda_hybrid --ms 64,128,256,1024 --dtypes f16 --scalars uint4b8 \
  --no-extra-groups --csv $O/prefill.csv > $O/prefill.log 2>&1; echo "prefill rc=$? t=$(($(date +%s)-T0))"
for d in f16 bf16; do for s in uint4b8 uint4; do
  timeout 60 $W/moe/w4a16_bench_moe $O/moe_${d}_$s.csv 1,4,16,64 $d $s > $O/moe_${d}_$s.log 2>&1 || echo "moe $d $s rc=$?"
done; done; echo "moe t=$(($(date +%s)-T0))"
timeout 120 python3 bench/gpu/peers_torch.py --ms 1,2,4,8,16 --csv $O/peers.csv > $O/peers.log 2>&1; echo "peers rc=$? t=$(($(date +%s)-T0))"
