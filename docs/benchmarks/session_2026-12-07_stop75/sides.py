#!/usr/bin/env python3
"""sides.py DIR [SIDES]: call13.sh's rows side by side, per (shape, dtype, format, m) the best us of each side (N default, F forced box, P prefill) in DIR/r."""
import csv, glob, sys, collections
d = sys.argv[1]; sides = sys.argv[2].split(',') if len(sys.argv) > 2 else ['H200N', 'H200F', 'H200P']
best = collections.defaultdict(dict); plan = {}
for s in sides:
    for p in glob.glob(f'{d}/r/{s}_*.csv'):
        for r in csv.DictReader(open(p)):
            k = (r['shape'], r['dtype'], r['format'], int(r['m']))
            u = float(r['us'])
            if r['ok'] != '1': print('NOT OK', s, k)
            if s not in best[k] or u < best[k][s]: best[k][s] = u
            plan[(s, k)] = r['plan'][:60]
print('shape dtype fmt m ' + ' '.join(sides) + ' ' + ' '.join(f'{sides[0]}/{x}' for x in sides[1:]) + '  plan(' + sides[0] + ')')
for k in sorted(best):
    v = best[k]
    print(*k, *[f"{v.get(s, float('nan')):.2f}" for s in sides], *[f"{v.get(sides[0], float('nan')) / v.get(x, float('nan')):.3f}" for x in sides[1:]], plan.get((sides[0], k), ''))
