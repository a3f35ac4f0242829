"""Tables of cpu_amx_sweep.csv (w4a16_bench_cpu --isa avx2,amx,best): per shape x M, the AVX2 and AMX times and
best's (what fast_gemm runs) GFLOP/s or GB/s. Usage: python3 summarize.py cpu_amx_sweep.csv [dtype] [format]"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
dtype = sys.argv[2] if len(sys.argv) > 2 else "float16"
fmt = sys.argv[3] if len(sys.argv) > 3 else "uint4b8"
t = {}
for r in rows:
    if r["dtype"] != dtype or r["format"] != fmt:
        continue
    key = (r["shape"], int(r["M"]))
    # the third run of each row is "best": its isa column names the implementation it ran
    t.setdefault(key, []).append(r)
shapes = list(dict.fromkeys(k[0] for k in t))
ms = sorted(set(k[1] for k in t))
print(f"| shape ({dtype}, {fmt}) | " + " | ".join(f"M = {m}" for m in ms) + " |")
print("|---|" + "---|" * len(ms))
for sh in shapes:
    cells = []
    for m in ms:
        rs = t.get((sh, m))
        if not rs or len(rs) < 3:
            cells.append("-")
            continue
        avx2, amx, best = (float(r["us"]) for r in rs[:3])
        bad = [r for r in rs[:3] if r["check"] != "ok"]
        perf = f'{float(rs[2]["GB/s"]):.1f} GB/s' if m == 1 else f'{float(rs[2]["GFLOP/s"]):.0f} GF/s'
        cells.append(f"{avx2 / amx:.2f}x, {perf} ({rs[2]['isa']})" + (" FAIL" if bad else ""))
    print(f"| {sh} | " + " | ".join(cells) + " |")
