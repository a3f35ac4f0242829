#!/usr/bin/env python3
"""A/B table of scripts/prefill-ab/run.sh: main's prefill_dq_ab vs a branch's, interleaved runs.

usage: ab_table.py DIR   (DIR holds bench_<old|new>_<round>.csv from run.sh)
Per (shape, scalar, M): median us of old and new over the rounds, new/old time ratio (< 1 = new
faster), cuBLAS fp16 median over all runs, old and new speedup over cuBLAS, and whether y_hash is
the same in every run of both builds (the kernels must be bit-identical). Then the geometric mean of
the ratios per scalar type and overall, and the verdict line.
"""
import csv, glob, math, os, re, statistics, sys

def main():
    d = sys.argv[1]
    us = {}      # (shape, scalar, m, build) -> [us]
    hashes = {}  # (shape, scalar, m) -> {hash}
    cub = {}     # (shape, m) -> [us]
    order = []
    for p in sorted(glob.glob(os.path.join(d, 'bench_*_*.csv'))):
        build = re.match(r'bench_(old|new)_\d+\.csv', os.path.basename(p)).group(1)
        for r in csv.DictReader(open(p)):
            m = int(r['m'])
            if r['kernel'].startswith('cublas_'):
                cub.setdefault((r['shape'], m), []).append(float(r['us']))
                continue
            key = (r['shape'], r['scalar'], m)
            if key not in order: order.append(key)
            us.setdefault(key + (build,), []).append(float(r['us']))
            hashes.setdefault(key, set()).add(r['y_hash'])
    print('%-18s %-8s %5s %9s %9s %7s %9s %7s %7s %4s %s' % ('shape', 'scalar', 'M', 'old_us', 'new_us', 'new/old', 'cublas', 'old_x', 'new_x', 'runs', 'y_same'))
    ratios, per_sc, all_same, complete = [], {}, True, True
    for key in order:
        o, n = us.get(key + ('old',), []), us.get(key + ('new',), [])
        c = cub.get((key[0], key[2]), [])
        same = len(hashes[key]) == 1
        all_same &= same
        if not o or not n:
            complete = False
            print('%-18s %-8s %5d  missing (old %d runs, new %d runs)' % (key + (len(o), len(n))))
            continue
        mo, mn = statistics.median(o), statistics.median(n)
        mc = statistics.median(c) if c else float('nan')
        r = mn / mo
        ratios.append(r)
        per_sc.setdefault(key[1], []).append(r)
        print('%-18s %-8s %5d %9.1f %9.1f %7.3f %9.1f %7.3f %7.3f %2d/%d %s' % (key[0], key[1], key[2], mo, mn, r, mc, mc / mo, mc / mn,
                                                                          len(o), len(n), 'yes' if same else 'NO'))
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')
    for sc, v in sorted(per_sc.items()):
        print('geomean new/old %s: %.3f (%d points)' % (sc, gm(v), len(v)))
    print('geomean new/old all: %.3f (%d points, worst %.3f)' % (gm(ratios), len(ratios), max(ratios) if ratios else float('nan')))
    print('y_hash identical old vs new at every point: %s' % ('yes' if all_same and ratios else 'NO'))
    if not complete: print('incomplete: some points lack old or new rows (a run timed out)')

if __name__ == '__main__':
    main()
