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
    name = r["kernel"]
    if name.startswith("cuda_prefill:wgmma_bm192") and "_ei:" in name:  # the forced 192 x 192 tile, SCHED 1
        name = "bm192_ei"
        by[k2]["bm192_plan"] = r["plan"]
    by[k2][name] = float(r["us"])
    by[k2]["err"] = max(by[k2].get("err", 0.0), float(r["rel_err"]))
    if r["kernel"] == "cuda_prefill":
        by[k2]["plan"] = r["plan"]

NEW = ["cuda_prefill_sched1", "cuda_prefill_sched2", "cuda_prefill_sched1_eb", "cuda_prefill_sched2_eb", "bm192_ei"]
SHORT = {"cuda_prefill_sched1": "s1", "cuda_prefill_sched2": "s2", "cuda_prefill_sched1_eb": "s1eb", "cuda_prefill_sched2_eb": "s2eb",
         "bm192_ei": "bm192"}
NAN = float("nan")


def f(x):
    return "-" if math.isnan(x) else f"{x:.1f}"


def ratio(a, b):
    return "-" if math.isnan(a) or math.isnan(b) else f"{a / b:.3f}"


print("old = default plan (SCHED 0), again = the same rerun last; base = min(old, again); sN = SCHED N twin, eb = no CTA barrier; "
      "bm192 = the 192 x 192 tile (3 warpgroups, SCHED 1) forced with the split rule")
print("| act | format | shape | M | cuBLAS us | old us | again us | " + " | ".join(SHORT[n] + " us" for n in NEW) + " | "
      + " | ".join("base/" + SHORT[n] for n in NEW) + " | best new x cuBLAS | base x cuBLAS | max rel_err | plan |")
print("|" + "---|" * (7 + 2 * len(NEW) + 4))
gains = defaultdict(list)
wins = defaultdict(int)
order = sorted(by, key=lambda k: (k[3], k[0] != "float16", k[1], k[2]))
for k in order:
    d = by[k]
    act, shape, m, fmt = k
    cub = d.get("cublas_bf16" if act in ("bf16", "bfloat16") else "cublas_f16", NAN)
    old = d.get("cuda_prefill", NAN)
    ag = d.get("cuda_prefill_again", NAN)
    base = old if math.isnan(ag) else min(old, ag)
    news = [d.get(n, NAN) for n in NEW]
    have = [x for x in news if not math.isnan(x)]
    best = min(have) if have else NAN
    print(f"| {act} | {fmt} | {shape} | {m} | {f(cub)} | {f(old)} | {f(ag)} | " + " | ".join(f(x) for x in news) + " | "
          + " | ".join(ratio(base, x) for x in news) + f" | {ratio(cub, best)} | {ratio(cub, base)} | {d.get('err', 0):.1e} | {d.get('plan', '')} |")
    if m >= 1024:
        for n, x in zip(NEW, news):
            if not math.isnan(x) and not math.isnan(base):
                gains[n].append(base / x)
                wins[n] += base / x > 1.02
for n in NEW:
    g = gains[n]
    if g:
        gm = math.exp(sum(math.log(x) for x in g) / len(g))
        print(f"{SHORT[n]}: M >= 1024 geomean base/new {gm:.3f} over {len(g)} points, faster by > 2% on {wins[n]}, range {min(g):.3f}..{max(g):.3f}")
bad = [r for r in rows if r["format"] != "dense" and not float(r["rel_err"]) <= 5e-3]
print(f"int4 rows: {sum(r['format'] != 'dense' for r in rows)}, with rel_err vs the dense-cache output > 5e-3 (or nan): {len(bad)}")
for r in bad[:10]:
    print("  BAD", r["kernel"], r["shape"], r["M"], r["dtype"], r["format"], r["rel_err"])
