#!/usr/bin/env bash
# Session 2026-12-04 stop 30, call 8: streaming-kernel plans at the token counts the measured table leaves to the cost model
# (M = 3, 5, 6, 7; at 3 and 6 the default plans ran slower than at 4 and 8 in call 3): 12 forced plans (W4A16_DECODE_PLAN =
# warps_n,splits[,xstream]) and the default (main e7eae7c: the bulk kernel where bulk_by_default says) on llama8b.qkv / o /
# gate_up / down and 8192x8192, fp16 uint4b8 g128, 1 round; one process per (plan, round) over all shapes (a plan that does
# not fit a shape throws there: such rows are missing).
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s30c8; mkdir -p $W/out .gpu/bin && tar -xJf .carry-s30/bins8.tar.xz -C .gpu/bin
B=.gpu/bin/w4a16_bench_gpu
echo "variant,kernel,shape,n,k,m,dtype,format,group,us,tb_per_s,pct_of_4.4TBps,tflops,speedup_vs_cublas_f16,rel_err,ok,plan" > $W/out/plans.csv
for r in 1; do
  for p in default 2,1 2,2 4,1 4,2 4,4 8,1 8,2 8,4 8,8 8,1,1 8,2,1 8,4,1; do
    for s in llama8b.qkv llama8b.o llama8b.gate_up llama8b.down 8192x8192; do
      env=(); [ "$p" = default ] || env=(W4A16_DECODE_PLAN="$p")
      env "${env[@]}" timeout 30 $B --shapes $s --ms 3,5,6,7 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --decode-max-m 16 \
        --csv $W/p.csv > /dev/null 2>> $W/out/err.log || echo "plan $p $s r$r rc=$?" >> $W/out/plans.log
      [ -f $W/p.csv ] && { tail -n +2 $W/p.csv | sed "s/^/\"$p\",/" >> $W/out/plans.csv; rm -f $W/p.csv; }
    done
  done
  echo "round $r t=$(($(date +%s)-T0))"
done
wc -l $W/out/plans.csv
tar -czf $OUT/call8.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
