#!/usr/bin/env python3
"""Summary of one prefill-red device run (scripts/prefill-red/run.sh): reads the work folder (step
logs, ab.csv or the rows the benchmark printed to stderr before a timeout) and prints
  1. the status of each step and the failed / last started test,
  2. per (shape, M): cuBLAS fp16 and the default plan under the four launch variants
     old (reduce kernel, no PDL) / pdl / cluster / both, us, and old/both, cuBLAS/both,
  3. the forced splits (qwen0.5b.qkv, llama8b.o): us per split and variant,
  4. every int4 row whose rel_err (vs the dense-cache output) exceeds 3e-4,
  5. the split term refitted per variant (bench/gpu/fit_prefill_plan.py on ab.csv).
Usage: summary.py WORKDIR"""
import collections
import csv
import io
import os
import re
import sys

work = sys.argv[1]
HDR = "kernel,shape,N,K,M,dtype,format,group,plan,us,TB/s,pct_4.4TB/s,TFLOP/s,speedup_vs_cublas_f16,rel_err"


def read(name):
    p = os.path.join(work, name)
    return open(p, errors="replace").read() if os.path.exists(p) else ""


print("== steps")
for line in read("steps.txt").splitlines():
    print("  " + line)
print("== tests")
for name in ("tests_new", "tests_rest"):
    t = read(name + ".log")
    fails = re.findall(r"^\[  FAILED  \] (\S+)", t, re.M)
    passed = re.findall(r"^\[  PASSED  \] (\d+) test", t, re.M)
    last = re.findall(r"^(?:cluster check|tma check) (.*)$", t, re.M)
    print(f"  {name}: passed {passed[-1] if passed else '?'}; failed {sorted(set(fails)) or 'none'}"
          + ("" if passed else f"; last started: {last[-1] if last else '-'}"))
    for line in [l for l in t.splitlines() if "Failure" in l or "differ" in l][:6]:
        print("    " + line[:160])

text = read("ab.csv")
if len(text.splitlines()) < 2:  # timed out before the CSV closed: the rows printed to stderr
    text = HDR + "\n" + "\n".join(l for l in read("bench.log").splitlines() if l.count(",") >= 14)
rows = list(csv.DictReader(io.StringIO(text)))
t = collections.defaultdict(dict)
plan = {}
bad = []
for r in rows:
    key = (r["shape"], int(r["M"]))
    t[key][r["kernel"]] = float(r["us"])
    if r["kernel"] == "ab_both":
        plan[key] = " ".join(r["plan"].split()[:2]).replace("wgmma_", "")
    if r["kernel"].startswith("ab_") and float(r["rel_err"]) > 3e-4:
        bad.append(f"{r['kernel']} {r['shape']} M={r['M']} rel_err {r['rel_err']}")
V = ("ab_old", "ab_pdl", "ab_cluster", "ab_both")
print("== default plan, fp16 uint4b8 g128 (us; old = reduce kernel + no PDL, both = cluster + PDL)")
print(f"  {'shape':17s} {'M':>5s} {'cuBLAS':>7s} {'old':>7s} {'pdl':>7s} {'cluster':>7s} {'both':>7s} {'old/both':>8s} {'cub/both':>8s}  plan")
geo = collections.defaultdict(list)
for key in sorted(t, key=lambda k: (list(dict.fromkeys(r["shape"] for r in rows)).index(k[0]), k[1])):
    d = t[key]
    if "ab_both" not in d:
        continue
    c = d.get("cublas_f16", 0)
    cells = " ".join(f"{d.get(v, 0):7.1f}" for v in V)
    ob = d.get("ab_old", 0) / d["ab_both"]
    cb = c / d["ab_both"]
    for v in V[1:]:
        if v in d and "ab_old" in d:
            geo[v].append(d["ab_old"] / d[v])
    print(f"  {key[0]:17s} {key[1]:5d} {c:7.1f} {cells} {ob:8.2f} {cb:8.2f}  {plan.get(key, '')}")
for v, xs in geo.items():
    g = 1.0
    for x in xs:
        g *= x
    print(f"  geomean old/{v[3:]}: {g ** (1 / len(xs)):.3f} over {len(xs)} points, min {min(xs):.3f}, max {max(xs):.3f}")
print("== forced splits (same tile as the default plan; us)")
for key in sorted(t):
    d = t[key]
    splits = sorted({int(k.split(':s')[1]) for k in d if k.startswith("ab_") and ":s" in k})
    for s in splits:
        print(f"  {key[0]:17s} {key[1]:5d} s{s} " + " ".join(f"{v[3:]}={d.get(f'{v}:s{s}', 0):.1f}" for v in V))
print("== rel_err > 3e-4 (vs dense cache):", "none" if not bad else "")
for b in bad[:20]:
    print("  " + b)
