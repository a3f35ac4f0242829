#!/usr/bin/env python3
"""decode-small A/B summary: summary.py OLD.csv SMALL.csv OUT.csv [T8.csv]
OLD.csv: w4a16_bench_gpu with W4A16_DECODE_SMALL=0 (the streaming kernel, + cuBLAS rows);
SMALL.csv: the same sweep with W4A16_DECODE_SMALL=1. Prints the table (shape, M, dtype, format,
old us, small us, old/small, cuBLAS same dtype, small's plan, checks) and writes both runs into
OUT.csv with a leading column `run`. T8.csv (optional): the small kernel with W4A16_DECODE_SMALL_T=8."""
import csv
import sys

# tinygemm (torch._weight_int4pack_mm, bf16 g128) as the lead measured it on the H200, same timer
# (brief of issue 4); only these points are known.
TINYGEMM = {("qwen0.5b.qkv", 1): 2.58, ("qwen0.5b.o", 1): 2.36, ("qwen0.5b.qkv", 16): 4.18, ("qwen0.5b.o", 16): 3.62,
            ("qwen0.5b.gate_up", 1): 5.35, ("qwen0.5b.down", 1): 5.11}


def read(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


old, small = read(sys.argv[1]), read(sys.argv[2])
t8 = read(sys.argv[4]) if len(sys.argv) > 4 else []
with open(sys.argv[3], "w", newline="") as f:
    w = None
    for run, rows in (("old", old), ("small", small), ("small_t8", t8)):
        for r in rows:
            if w is None:
                w = csv.DictWriter(f, fieldnames=["run"] + list(r.keys()))
                w.writeheader()
            w.writerow({"run": run, **r})

key = lambda r: (r["shape"], int(r["m"]), r["dtype"], r["format"], r["group"])
cub = {(r["shape"], int(r["m"]), r["dtype"]): float(r["us"]) for r in old if r["kernel"].startswith("cublas")}
o = {key(r): r for r in old if r["kernel"] == "cuda_decode"}
s = {key(r): r for r in small if r["kernel"] == "cuda_decode"}
s8 = {key(r): r for r in t8 if r["kernel"] == "cuda_decode"}
print("| shape | M | dtype | format | old us | small us | old/small | cuBLAS us | tinygemm us (lead) | small T>=8 us | small plan | ok old/small |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
wins = losses = 0
for k in sorted(set(o) | set(s), key=lambda k: (k[0], k[2], k[3], k[1])):
    ro, rs = o.get(k), s.get(k)
    uo = float(ro["us"]) if ro else None
    us = float(rs["us"]) if rs else None
    ratio = f"{uo / us:.2f}" if uo and us else "-"
    if uo and us and "small" in rs["plan"]:
        wins += us < uo
        losses += us >= uo
    c = cub.get((k[0], k[1], k[2]))
    tg = TINYGEMM.get((k[0], k[1]), None)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {uo if uo else '-'} | {us if us else '-'} | {ratio} | {c if c else '-'} | "
          f"{tg if tg else ''} | {s8[k]['us'] + (' (' + s8[k]['plan'].split(' warps_n')[0] + ')') if k in s8 else ''} | {rs['plan'] if rs else '-'} | {ro['ok'] if ro else '-'}/{rs['ok'] if rs else '-'} |")
print(f"small-kernel points faster than the streaming kernel: {wins}, not faster: {losses} "
      f"(rows whose plan says small; others fell back to the streaming kernel in both runs)")
bad = [k for k, r in list(o.items()) + list(s.items()) + list(s8.items()) if r["ok"] != "1"]
print(f"rows: old {len(o)}, small {len(s)}; correctness check of every timed row:", "all ok" if not bad else f"{len(bad)} FAILED: {bad[:6]}")
