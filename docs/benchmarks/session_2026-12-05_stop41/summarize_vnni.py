"""Summarize cpu_vnni_sweep.csv (w4a16_bench_cpu --isa avx2,vnni,amx): per (dtype, format, M) the median over shapes
of the time ratios avx2 / vnni and amx / vnni (> 1: vnni faster), and the fastest implementation's count."""
import collections
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else "cpu_vnni_sweep.csv")))
bad = [r for r in rows if r["check"] != "ok"]
t = {(r["shape"], r["dtype"], r["format"], int(r["M"]), r["isa"]): float(r["us"]) for r in rows}
print(f"{len(rows)} rows, {len(bad)} not ok")
print("| dtype | format | M | avx2 / vnni (median, min-max) | amx / vnni (median, min-max) | fastest (shapes) |")
print("|---|---|---|---|---|---|")
for dt, fm, m in sorted({(k[1], k[2], k[3]) for k in t}):
    shapes = sorted({k[0] for k in t if k[1:4] == (dt, fm, m)})
    a = [t[(s, dt, fm, m, "avx2")] / t[(s, dt, fm, m, "vnni")] for s in shapes]
    x = [t[(s, dt, fm, m, "amx")] / t[(s, dt, fm, m, "vnni")] for s in shapes]
    win = collections.Counter(min(("avx2", "vnni", "amx"), key=lambda i: t[(s, dt, fm, m, i)]) for s in shapes)
    print(f"| {dt} | {fm} | {m} | {statistics.median(a):.2f} ({min(a):.2f}-{max(a):.2f}) | "
          f"{statistics.median(x):.2f} ({min(x):.2f}-{max(x):.2f}) | {', '.join(f'{k} {v}' for k, v in win.most_common())} |")
