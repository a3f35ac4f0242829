#!/usr/bin/env python3
"""Summary of one prefill-tma device run (scripts/prefill-tma/run.sh): reads the work folder
(step logs, tma.csv or the rows the benchmark printed before a timeout) and prints
  1. the status of each step (tests: passed / failed / hung, with the last config started),
  2. per (shape, M, dtype, format): cuBLAS fp16, the cp.async plan of 2026-12-02 ("old"), the
     default plan (TMA, "new"), the fastest forced config, each as us and x cuBLAS fp16,
  3. every int4 row whose rel_err (vs the dense-cache output) exceeds 3e-4 (fp16) / 2e-3 (bf16).
Usage: summary.py WORKDIR"""
import csv
import glob
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
for name in ("tests_tma", "tests_tmaeb", "tests_rest", "sanitizer"):
    log = read(name + ".log")
    if not log:
        continue
    passed = re.findall(r"^\[\s+OK \] (\S+)", log, re.M)
    failed = sorted(set(re.findall(r"^\[\s+FAILED\s+\] (\S+) \(", log, re.M)))
    skipped = re.findall(r"^\[\s+SKIPPED \] (\S+) \(", log, re.M)
    runs = re.findall(r"^\[ RUN\s+\] (\S+)", log, re.M)
    done = set(passed) | set(failed) | set(skipped)
    open_runs = [r for r in runs if r not in done]
    line = f"  {name}: {len(passed)} passed, {len(failed)} failed {failed if failed else ''}, {len(skipped)} skipped"
    if open_runs:
        checks = re.findall(r"^tma check (.*)$", log, re.M)
        line += f"; UNFINISHED (hang/timeout?) in {open_runs[-1]}" + (f", last config started: {checks[-1]}" if checks else "")
    reason = re.search(r"Skipped\n(.+)", log)
    if skipped and reason:
        line += f" (skip reason: {reason.group(1).strip()[:100]})"
    print(line)
    if name == "sanitizer":
        m = re.search(r"ERROR SUMMARY: (\d+) error", log)
        print("  sanitizer: " + (m.group(0) if m else "no ERROR SUMMARY line (not run or cut off)"))
    fails = re.findall(r"^.*(?:Failure|error:).*$", log, re.M)
    for f in fails[:6]:
        print("    " + f[:200])

rows = []
seen = set()
for src in ("tma.csv", "bench.log"):
    for line in read(src).splitlines():
        if line.count(",") < 14 or line.startswith("kernel,"):
            continue
        r = next(csv.reader([line]))
        if len(r) != 15:
            continue
        key = (r[0], r[1], r[4], r[5], r[6], r[8])
        if key in seen:
            continue
        seen.add(key)
        d = dict(zip(HDR.split(","), r))
        try:
            d["us"] = float(d["us"])
            d["rel_err"] = float(d["rel_err"])
        except ValueError:
            continue
        rows.append(d)

print("== prefill_bench tma: us per call (x cuBLAS fp16; > 1 = faster than cuBLAS)")
groups = {}
for d in rows:
    groups.setdefault((d["shape"], int(d["M"]), d["dtype"], d["format"] if d["format"] != "dense" else None), []).append(d)
keys = sorted({(s, m, dt) for (s, m, dt, f) in groups}, key=lambda k: (k[0], k[2], k[1]))
print(f"  {'shape':16s} {'M':>5s} {'dtype':8s} {'fmt':7s} {'cuBLAS16':>9s} {'old(cp.async)':>16s} {'new(TMA plan)':>16s} {'new/old':>7s}  best forced")
for (s, m, dt) in keys:
    peer = [d for d in groups.get((s, m, dt, None), []) if d["kernel"] == "cublas_f16"]
    cub = peer[0]["us"] if peer else None
    for fmt in ("uint4b8", "uint4"):
        g = groups.get((s, m, dt, fmt))
        if not g:
            continue
        old = next((d for d in g if d["kernel"] == "cuda_prefill_cp_async_plan"), None)
        new = next((d for d in g if d["kernel"] == "cuda_prefill"), None)
        forced = [d for d in g if d["kernel"].startswith("cuda_prefill:")]
        best = min(forced, key=lambda d: d["us"]) if forced else None

        def cell(d):
            if d is None:
                return "-"
            x = f"({cub / d['us']:.2f}x)" if cub else ""
            return f"{d['us']:.1f}{x}"

        ratio = f"{old['us'] / new['us']:.2f}" if old and new else "-"
        bs = f"{best['kernel'].split(':', 1)[1]} {cell(best)}" if best else "-"
        print(f"  {s:16s} {m:5d} {dt:8s} {fmt:7s} {cub if cub else 0:9.1f} {cell(old):>16s} {cell(new):>16s} {ratio:>7s}  {bs}")

print("== forced configs (us), per shape and M")
for (s, m, dt) in keys:
    g = groups.get((s, m, dt, "uint4b8"), [])
    forced = sorted([d for d in g if d["kernel"].startswith("cuda_prefill:")], key=lambda d: d["kernel"])
    if forced:
        print(f"  {s} M={m} {dt}: " + ", ".join(f"{d['kernel'].split(':', 1)[1]}={d['us']:.1f}" for d in forced))

bad = [d for d in rows if d["kernel"].startswith("cuda_prefill") and not (d["rel_err"] <= (3e-4 if d["dtype"] == "float16" else 2e-3))]
print(f"== rel_err check of {sum(1 for d in rows if d['kernel'].startswith('cuda_prefill'))} int4 rows: "
      + ("all within 3e-4 (fp16) / 2e-3 (bf16)" if not bad else f"{len(bad)} OUT OF BOUND"))
for d in bad[:20]:
    print(f"  {d['kernel']} {d['shape']} M={d['M']} {d['dtype']} {d['format']} rel_err={d['rel_err']:.2e}")
