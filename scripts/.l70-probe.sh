for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; p = os.path.dirname(nvidia.__path__[0]); print(" ".join(os.path.join(p, "nvidia", s, "lib") for s in ("cublas", "cuda_runtime")))' 2>/dev/null); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
[ -d .gpu/bin ] || { mkdir -p .gpu && tar -xJf .carry/gpu.tar.xz -C .gpu; }
B=.gpu/bin/w4a16_bench_gpu
for v in default 8,1 8,1,1 4,1 2,1 8,2 persist0; do
  env=(); case $v in default) ;; persist0) env=(W4A16_DECODE_PERSIST=0);; *) env=(W4A16_DECODE_PLAN=$v);; esac
  env "${env[@]}" timeout 40 $B --shapes llama70b.gate_up,llama8b.gate_up --ms 1,2 --dtypes f16 --scalars uint4b8 --no-extra-groups --no-cublas --csv /tmp/x.csv >/dev/null 2>&1
  tail -n +2 /tmp/x.csv | awk -F, -v v=$v '{print v, $2, $5, $9, $NF}'
done
