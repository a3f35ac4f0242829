#!/usr/bin/env bash
# Stop 39, call 3: main a2b78f7 (the streaming kernel's uint4b8 pairs at 1..8 tokens, 8192x8192 staged at 9..16), sm_90a
# binaries in .carry-s39/main3.tar.xz (w4a16_test_gpu_decode, w4a16_test_gpu_registry, w4a16_bench_gpu). Its decode and
# registry GPU tests, then the decode sweep of the PERF.md shapes at M = 1..16, fp16 / bf16 uint4b8 g = 128, with cuBLAS
# fp16 / bf16 in the same process (the top table's decode rows). Then candidate F (branch xcopy-lean, new2.tar.xz: the
# streaming kernel's x copies at 9..16 tokens in two unrolled passes, 11-22 fewer loop instructions statically, no spills)
# against main: its decode tests, 3 interleaved rounds, 6 layers x M = 12 / 16 x fp16 / bf16 x uint4b8 / uint4.
# Then candidate G (branch xstream-kgroups, new3.tar.xz: x streamed with warps_k > 1, a window of x per K group, its own
# instantiation; forced plans only): its decode tests (StreamedXWindows among them), then forced windowed plans against
# the default plan at M = 12 / 16 on 5 layers, fp16 uint4b8, one process per (plan, layer), 2 rounds.
T0=$(date +%s)
. scripts/lib/device-env.sh
W=/tmp/s39c3; mkdir -p $W/out && tar -xJf .carry-s39/main3.tar.xz -C $W && tar -xJf .carry-s39/new2.tar.xz -C $W && tar -xJf .carry-s39/new3.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 $W/main/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode.log 2>&1 &
timeout 200 $W/main/w4a16_test_gpu_registry --gtest_brief=1 > $W/out/test_registry.log 2>&1 &
timeout 200 $W/new2/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode_new2.log 2>&1 &
timeout 200 $W/new3/w4a16_test_gpu_decode --gtest_brief=1 > $W/out/test_decode_new3.log 2>&1 &
wait
echo "new3 decode tests"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_decode_new3.log | head -8
for t in decode registry; do echo "$t tests t=$(($(date +%s)-T0))"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure|SKIPPED' $W/out/test_$t.log | head -8; done
timeout 300 $W/main/w4a16_bench_gpu --shapes qwen0.5b.qkv,qwen0.5b.o,qwen0.5b.gate_up,qwen0.5b.down,llama8b.qkv,llama8b.o,llama8b.gate_up,llama8b.down,8192x8192,llama70b.gate_up \
  --ms 1,2,4,8,12,16 --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --decode-max-m 16 --csv $W/out/sweep.csv > $W/out/sweep.log 2>&1
echo "sweep rc=$? t=$(($(date +%s)-T0))"
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open('/tmp/s39c3/out/sweep.csv')))
cub = {(r['shape'], r['dtype'], r['m']): float(r['us']) for r in rows if r['kernel'].startswith('cublas')}
bad = [r for r in rows if r['ok'] != '1']
print('rows', len(rows), 'not ok', len(bad))
for r in rows:
    if r['kernel'] == 'cuda_decode':
        c = cub.get((r['shape'], r['dtype'], r['m']))
        print(f"{r['shape']:17s} {r['dtype']:8s} M={r['m']:2s} {float(r['us']):7.2f} us {float(r['pct_of_4.4TBps']):5.1f}%  cublas {c if c else 0:7.2f}  {r['plan'][:48]}")
PY
echo "new2 decode tests"; grep -E '^\[  (PASSED|FAILED)|FAILED|Failure' $W/out/test_decode_new2.log | head -6
SH=8192x8192,llama8b.gate_up,llama8b.qkv,llama8b.o,llama8b.down,qwen0.5b.gate_up
for r in 1 2 3; do
  for v in main new2; do
    timeout 120 $W/$v/w4a16_bench_gpu --shapes $SH --ms 12,16 --dtypes f16,bf16 --scalars uint4b8,uint4 --no-extra-groups --no-cublas \
      --decode-max-m 16 --csv $W/out/ab_${v}_$r.csv > /dev/null 2>&1 || echo "$v round $r rc=$?"
  done
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 bench/gpu/ab_compare.py $W/out/ab_main_1.csv,$W/out/ab_main_2.csv,$W/out/ab_main_3.csv \
  $W/out/ab_new2_1.csv,$W/out/ab_new2_2.csv,$W/out/ab_new2_3.csv > $W/out/ab_new2.md 2>&1
echo "== main -> new2: $(grep -E 'rows;' $W/out/ab_new2.md); rows not ok: $(grep -c '| NO |' $W/out/ab_new2.md)"
grep "cuda_decode" $W/out/ab_new2.md | awk -F'|' '{printf "%-17s %-9s %-8s M=%-2s %8s %8s %s\n", $3, $4, $5, $7, $8, $9, $10}'
echo "variant,kernel,shape,n,k,m,dtype,format,group,us,tb_per_s,pct_of_4.4TBps,tflops,speedup_vs_cublas_f16,rel_err,ok,plan" > $W/out/g.csv
for r in 1 2; do
  for s in llama8b.down llama8b.o llama8b.qkv 8192x8192 llama8b.gate_up; do
    for p in default 4,2,1 2,1,1 4,4,1 2,2,1 4,1,1; do
      env=(); [ $p = default ] || env=(W4A16_DECODE_PLAN=$p)
      env "${env[@]}" timeout 30 $W/new3/w4a16_bench_gpu --shapes $s --ms 12,16 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas \
        --csv $W/g1.csv > /dev/null 2>>$W/out/g_err.log || echo "plan $p $s rc=$?" >> $W/out/g_err.log
      [ -f $W/g1.csv ] && { tail -n +2 $W/g1.csv | sed "s/^/\"$p\",/" >> $W/out/g.csv; rm -f $W/g1.csv; }
    done
  done
  echo "G round $r t=$(($(date +%s)-T0))"
done
python3 - <<'PY'
import csv
best = {}
for r in csv.DictReader(open('/tmp/s39c3/out/g.csv')):
    k = (r['shape'], r['m'], r['variant'])
    if k not in best or float(r['us']) < best[k][0]: best[k] = (float(r['us']), r['ok'], r['plan'])
for k in sorted(best):
    print(f"G {k[0]:16s} M={k[1]:3s} {k[2]:8s} {best[k][0]:8.2f} us ok={best[k][1]} {best[k][2][:75]}")
PY
tar -czf $OUT/call3.tar.gz -C $W/out .
echo "total $(($(date +%s)-T0)) s"
