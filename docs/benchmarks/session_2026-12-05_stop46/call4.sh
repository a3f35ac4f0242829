#!/usr/bin/env bash
# Stop 46, call 4: the bulk decode kernel's PDL trigger. Today every block lets the next kernel launch right after its own
# griddepcontrol.wait, so the next kernel's blocks (where they fit beside this one's) fill their rings while this kernel
# streams (competing with it), and where they do not fit (216 KB rings on 8192x8192) they start only as these blocks exit.
# W4A16_DECODE_PDL_TRIGGER=late lets the next kernel launch only once the producer has issued its last stage, so its
# ring fill lands in this kernel's tail. Same binary, knobs only (this stop's build), fp16 / bf16 uint4b8 g128 M = 1
# (and M = 4 on the layers whose M = 4 plan is the bulk kernel), 2 interleaved rounds, every row against f64:
#   early / late with the default plans (8 layers);
#   early / late with two blocks per SM forced (W4A16_DECODE_BULK_PLAN=wn,2: rings of <= ~113 KB, so that the next
#   kernel's block fits beside this one's) on the layers whose default plan takes one block of 156-229 KB.
# Then the bulk decode tests under the late trigger. Carry: .carry-s46/g3.tar.xz (w4a16_bench_gpu, w4a16_test_gpu_decode).
T0=$(date +%s)
. scripts/lib/device-env.sh
R=$OUT; O=/tmp/s46c4_out; mkdir -p $O; trap 'tar -czf $R/call4.tar.gz -C $O .' EXIT
W=/tmp/s46c4; rm -rf $W; mkdir -p $W && tar -xJf .carry-s46/g3.tar.xz -C $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/gpu.txt
B=$W/g3/w4a16_bench_gpu
ALL=qwen0.5b.gate_up,qwen0.5b.down,llama8b.o,llama8b.qkv,llama8b.down,llama8b.gate_up,8192x8192,llama70b.gate_up
run() {  # tag, env..., -- bench args
  local tag=$1; shift; local env=(); while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  env "${env[@]}" timeout 120 $B "$@" --dtypes f16,bf16 --scalars uint4b8 --no-extra-groups --no-cublas --csv $O/$tag.csv > $O/$tag.log 2>&1 || echo "$tag rc=$?"
}
for r in 1 2; do
  run early_$r -- --shapes $ALL --ms 1
  run late_$r W4A16_DECODE_PDL_TRIGGER=late -- --shapes $ALL --ms 1
  run early4_$r -- --shapes llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down --ms 4
  run late4_$r W4A16_DECODE_PDL_TRIGGER=late -- --shapes llama70b.gate_up,qwen0.5b.gate_up,qwen0.5b.down --ms 4
  run b42e_$r W4A16_DECODE_BULK_PLAN=4,2 -- --shapes 8192x8192,llama8b.qkv,llama70b.gate_up --ms 1
  run b42l_$r W4A16_DECODE_BULK_PLAN=4,2 W4A16_DECODE_PDL_TRIGGER=late -- --shapes 8192x8192,llama8b.qkv,llama70b.gate_up --ms 1
  run b22e_$r W4A16_DECODE_BULK_PLAN=2,2 -- --shapes llama8b.down --ms 1
  run b22l_$r W4A16_DECODE_BULK_PLAN=2,2 W4A16_DECODE_PDL_TRIGGER=late -- --shapes llama8b.down --ms 1
  echo "round $r t=$(($(date +%s)-T0))"
done
python3 - <<'PY' | tee $O/ab.txt
import csv, glob, collections, re
t, bad, plan = collections.defaultdict(list), 0, {}
for f in sorted(glob.glob('/tmp/s46c4_out/*_[12].csv')):
    tag = re.sub(r'_[12]\.csv$', '', f.split('/')[-1])
    for r in csv.DictReader(open(f)):
        if r['kernel'].startswith('cuda'):
            k = (r['shape'], r['dtype'], int(r['m']))
            t[k + (tag,)].append(float(r['us'])); bad += r['ok'] != '1'; plan[k + (tag,)] = r['plan']
print(f"rows not ok: {bad}")
pairs = [('early', 'late'), ('early4', 'late4'), ('b42e', 'b42l'), ('b22e', 'b22l')]
for k in sorted({k[:3] for k in t}):
    base = min(t.get(k + ('early',), t.get(k + ('early4',), [0])))
    line = f"{k[0]:17s} {k[1]:9s} M={k[2]}"
    for a, b in pairs:
        if k + (a,) in t and k + (b,) in t:
            ta, tb = min(t[k + (a,)]), min(t[k + (b,)])
            line += f" | {a} {ta:7.2f} {b} {tb:7.2f} ({tb / ta:.3f}, vs default {tb / base:.3f})"
    print(line)
PY
W4A16_DECODE_PDL_TRIGGER=late timeout 150 $W/g3/w4a16_test_gpu_decode --gtest_brief=1 --gtest_filter='Decode.Bulk*:Decode.ChainedLayers*:Decode.GraphCaptureReplay' > $O/test_decode_late.log 2>&1
grep -E '^\[  (PASSED|FAILED)|tests ran' $O/test_decode_late.log; echo "done t=$(($(date +%s)-T0))"
