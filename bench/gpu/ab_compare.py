#!/usr/bin/env python3
"""Compares w4a16_bench_gpu CSVs of two builds measured in one device call (scripts/ab-bench).

usage: ab_compare.py old1.csv[,old2.csv...] new1.csv[,new2.csv...] > table.md
Per (kernel, shape, dtype, format, group, m): the best (least) us of each side's rounds, the ratio
old / new (> 1: the new build is faster), the largest rel_err of each side and whether every row
passed the f64 check. Rows present on one side only are listed at the end.
"""
import csv
import sys


def load(paths):
    best = {}
    for path in paths.split(","):
        with open(path) as f:
            for r in csv.DictReader(f):
                key = (r["kernel"], r["shape"], r["dtype"], r["format"], r["group"], int(r["m"]))
                us, err, ok = float(r["us"]), float(r["rel_err"]), r["ok"] == "1"
                if key in best:
                    b = best[key]
                    best[key] = (min(b[0], us), max(b[1], err), b[2] and ok, b[3])
                else:
                    best[key] = (us, err, ok, r.get("plan", ""))
    return best


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, new = load(sys.argv[1]), load(sys.argv[2])
    print("| kernel | shape | dtype | format | g | M | old us | new us | old/new | rel_err old / new | ok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for key in sorted(old.keys() & new.keys(), key=lambda k: (k[0], k[2], k[3], k[1], k[5])):
        o, n = old[key], new[key]
        ratios.append(o[0] / n[0])
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {key[5]} | {o[0]:.2f} | {n[0]:.2f} | "
              f"{o[0] / n[0]:.3f} | {o[1]:.1e} / {n[1]:.1e} | {'yes' if o[2] and n[2] else 'NO'} |")
    if ratios:
        ratios.sort()
        print(f"\n{len(ratios)} rows; old/new min {ratios[0]:.3f}, median {ratios[len(ratios) // 2]:.3f}, max {ratios[-1]:.3f}")
    for side, a, b in (("old only", old, new), ("new only", new, old)):
        for key in sorted(a.keys() - b.keys()):
            print(f"{side}: {key}")


if __name__ == "__main__":
    main()
