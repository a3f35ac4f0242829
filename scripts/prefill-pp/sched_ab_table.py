#!/usr/bin/env python3
"""Summary of `prefill_bench out.csv sched_ab` (the k-loop order A/B of branch prefill-pp).
Usage: sched_ab_table.py sched_ab.csv
Prints, per (act dtype, format, shape, M): cuBLAS of the act dtype (us), the default plan (old,
SCHED 0), its SCHED 1 / SCHED 2 twins, the default plan again (drift), old/new speedups, the best
new vs cuBLAS, the largest rel_err of the int4 rows; then per SCHED the geomean speedup over
M >= 1024 and how many of those points it wins by > 2%."""
import csv
import math
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
# prefill_rows emits per M the cuBLAS rows (format "dense"), then the int4 rows of one format; the
# same (dtype, shape, M) comes once per format, each with its own cuBLAS rows: attach each cuBLAS
# set to the int4 block that follows it in file order.
by = defaultdict(dict)
pending = {}
for r in rows:
    key = (r["dtype"], r["shape"], int(r["M"]))
    if r["format"] == "dense":
        pending.setdefault(key, {})[r["kernel"]] = float(r["us"])
        continue
    k2 = key + (r["format"],)
    by[k2].update(pending.pop(key, {}))
    by[k2][r["kernel"]] = float(r["us"])
    by[k2]["err"] = max(by[k2].get("err", 0.0), float(r["rel_err"]))
    if r["kernel"] == "cuda_prefill":
        by[k2]["plan"] = r["plan"]

print("| act | format | shape | M | cuBLAS us | old (default) us | sched1 us | sched2 us | again us | old/s1 | old/s2 | best new x cuBLAS | old x cuBLAS | max rel_err | plan |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
gains = defaultdict(list)
wins = defaultdict(int)
order = sorted(by, key=lambda k: (k[3], k[0] != "float16", k[1], k[2]))
for k in order:
    d = by[k]
    act, shape, m, fmt = k
    cub = d.get("cublas_bf16" if act in ("bf16", "bfloat16") else "cublas_f16", float("nan"))
    old = d.get("cuda_prefill", float("nan"))
    s1 = d.get("cuda_prefill_sched1", float("nan"))
    s2 = d.get("cuda_prefill_sched2", float("nan"))
    ag = d.get("cuda_prefill_again", float("nan"))
    base = min(old, ag) if not math.isnan(ag) else old
    best = min(x for x in (s1, s2) if not math.isnan(x)) if not (math.isnan(s1) and math.isnan(s2)) else float("nan")
    def f(x):
        return "-" if math.isnan(x) else f"{x:.1f}"
    def r(a, b):
        return "-" if math.isnan(a) or math.isnan(b) else f"{a / b:.3f}"
    print(f"| {act} | {fmt} | {shape} | {m} | {f(cub)} | {f(old)} | {f(s1)} | {f(s2)} | {f(ag)} | {r(base, s1)} | {r(base, s2)} | {r(cub, best)} | {r(cub, base)} | {d.get('err', 0):.1e} | {d.get('plan', '')} |")
    if m >= 1024:
        for name, x in (("sched1", s1), ("sched2", s2)):
            if not math.isnan(x) and not math.isnan(base):
                gains[name].append(base / x)
                wins[name] += base / x > 1.02
for name in ("sched1", "sched2"):
    g = gains[name]
    if g:
        gm = math.exp(sum(math.log(x) for x in g) / len(g))
        print(f"{name}: M >= 1024 geomean old/new {gm:.3f} over {len(g)} points, faster by > 2% on {wins[name]}, range {min(g):.3f}..{max(g):.3f}")
