"""cpu_best_old_vs_new.txt (label round shape M dtype isa us check, from /tmp/se.sh in the README): per (dtype, M) the
old / new time ratio of each shape's best round (> 1: the new build faster), median and range over the 10 shapes."""
import collections
import statistics
import sys

best = collections.defaultdict(lambda: float("inf"))
isa = {}
bad = 0
for line in open(sys.argv[1] if len(sys.argv) > 1 else "cpu_best_old_vs_new.txt"):
    label, _, shape, m, dt, which, us, check = line.split()
    bad += check != "ok"
    key = (label, shape, int(m), dt)
    best[key] = min(best[key], float(us))
    isa[key] = which
print(f"rows not ok: {bad}")
print("| dtype | M | old -> new implementation | old / new (median, min-max over 10 shapes) |")
print("|---|---|---|---|")
for dt, m in sorted({(k[3], k[2]) for k in best}):
    shapes = sorted({k[1] for k in best if k[2:] == (m, dt)})
    r = [best[("old", s, m, dt)] / best[("new", s, m, dt)] for s in shapes]
    runs = f"{isa[('old', shapes[0], m, dt)]} -> {isa[('new', shapes[0], m, dt)]}"
    print(f"| {dt} | {m} | {runs} | {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f}) |")
