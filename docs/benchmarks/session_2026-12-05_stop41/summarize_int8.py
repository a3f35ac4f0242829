"""int8_ab.txt (int8_ab.sh: variant round shape M us check): per M the pair / int8 time ratio of each shape's best
round (> 1: the INT8 tiles faster) and vnni / int8 (> 1: AMX on INT8 faster than the VNNI kernel), median and range
over the shapes."""
import collections
import statistics
import sys

best = collections.defaultdict(lambda: float("inf"))
bad = 0
for line in open(sys.argv[1] if len(sys.argv) > 1 else "int8_ab.txt"):
    v, _, shape, m, us, check = line.split()
    bad += check != "ok"
    best[(v, shape, int(m))] = min(best[(v, shape, int(m))], float(us))
print(f"rows not ok: {bad}")
print("| M | pair / int8 (median, min-max) | vnni / int8 (median, min-max) | shapes where int8 beats vnni |")
print("|---|---|---|---|")
for m in sorted({k[2] for k in best}):
    shapes = sorted({k[1] for k in best if k[2] == m and k[0] == "int8"})
    a = [best[("pair", s, m)] / best[("int8", s, m)] for s in shapes]
    b = [best[("vnni", s, m)] / best[("int8", s, m)] for s in shapes]
    print(f"| {m} | {statistics.median(a):.2f} ({min(a):.2f}-{max(a):.2f}) | {statistics.median(b):.2f} "
          f"({min(b):.2f}-{max(b):.2f}) | {sum(x > 1 for x in b)} of {len(b)} |")
