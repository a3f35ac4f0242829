#!/usr/bin/env python3
"""How far the prefill cost model's estimates sit from the tunes' measurements, per tile and token range (issue 5).

usage: scripts/prefill-ab/model_bias.py [--picks] PREFILL_DQ_AB TUNE.csv[.gz] ...
Takes the split-1 rows of `prefill_bench tune_tma` CSVs (every forced tile at split 1), asks
`PREFILL_DQ_AB estimate` (no device needed) for the model's estimate of the same tile and M, and prints
estimate / measured per (tile, token range): the geometric mean, min and max. A tile the model rates
better than it runs, relative to the others in the same range, is one it will pick wrongly there.
--picks: per (layer, M) with five or more tiles timed, the measured time of the estimate's split-1 pick over the best
tile's (geomean per token range): among the model's candidates (kModelTiles, the 2-CTA tile up to 128 tokens), among all
six tiles, and both with per-(tile, range) bias factors fitted with the point's layer left out.
Used for stop 27 (docs/benchmarks/prefill.md, "Why the table-only tiles mislead the model").
"""
import collections
import csv
import gzip
import math
import subprocess
import sys


def token_range(m):
    for hi, name in ((128, '<=128'), (256, '129..256'), (768, '257..768'), (1536, '769..1536')):
        if m <= hi:
            return name
    return '>1536'


MODEL_TILES = {'wgmma_bm256_bn128_s5_ov_tma', 'wgmma_bm128_bn256_s6_ov_tma', 'wgmma_bm64_bn128_s6_ov_occ2_tma',
               'wgmma_bm128_bn128_s8_ov_tma'}
OCC2 = 'wgmma_bm128_bn128_s4_ov_occ2_tma'
RANGES = ['<=128', '129..256', '257..768', '769..1536', '>1536']


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def picks(rows, est):
    pts = collections.defaultdict(dict)  # (N, K, M) -> tile -> (measured, estimate), the faster of repeated rows
    for r, e in zip(rows, est):
        if e == 'nan':
            continue
        t = r[3].replace('_ei', '')
        cur = pts[r[:3]].get(t)
        if cur is None or r[4] < cur[0]:
            pts[r[:3]][t] = (r[4], float(e))

    def bias(exclude):
        g = collections.defaultdict(list)
        for key, d in pts.items():
            if key[:2] != exclude:
                for t, (me, es) in d.items():
                    g[(t, token_range(key[2]))].append(es / me)
        return {k: geomean(v) for k, v in g.items()}

    res = collections.defaultdict(list)
    for key, d in pts.items():
        now = [t for t in d if t in MODEL_TILES or (t == OCC2 and key[2] <= 128)]
        if len(d) < 5 or not now:
            continue
        best, b, r = min(v[0] for v in d.values()), bias(key[:2]), token_range(key[2])
        corrected = lambda t: d[t][1] / b.get((t, r), 1.0)
        for name, cands, f in (('model tiles', now, lambda t: d[t][1]), ('all six tiles', list(d), lambda t: d[t][1]),
                               ('model tiles, corrected', now, corrected), ('all six, corrected', list(d), corrected)):
            p = min(cands, key=f)
            res[(name, r)].append(d[p][0] / best)
            res[(name, 'all')].append(d[p][0] / best)
    print('%-24s %s' % ('split-1 pick / best', ' '.join('%11s' % n for n in RANGES + ['all'])))
    for name in ('model tiles', 'all six tiles', 'model tiles, corrected', 'all six, corrected'):
        cells = ['%.3f/%d' % (geomean(res[(name, r)]), len(res[(name, r)])) if res[(name, r)] else '-' for r in RANGES + ['all']]
        print('%-24s %s' % (name, ' '.join('%11s' % c for c in cells)))


def main():
    args = [a for a in sys.argv[1:] if a != '--picks']
    if len(args) < 2:
        sys.exit(__doc__)
    rows = []
    for path in args[1:]:
        f = gzip.open(path, 'rt') if path.endswith('.gz') else open(path)
        for r in csv.DictReader(f):
            if not r['kernel'].startswith('cuda_prefill:') or not r['kernel'].endswith(':s1'):
                continue
            tile = r['kernel'].split(':')[1]
            rows.append((int(r['N']), int(r['K']), int(r['M']), tile, float(r['us'])))
    query = ''.join('%d %d %d %s 1\n' % r[:4] for r in rows)
    est = subprocess.run([args[0], 'estimate'], input=query, capture_output=True, text=True, check=True).stdout.split()
    if '--picks' in sys.argv:
        picks(rows, est)
        return
    groups = collections.defaultdict(list)
    for r, e in zip(rows, est):
        if e != 'nan':
            short = r[3].replace('wgmma_', '').replace('_tma_ei', '').replace('_tma', '')
            groups[(short, token_range(r[2]))].append(float(e) / r[4])
    print('%-26s %-10s %5s %9s %7s %7s' % ('tile (split 1)', 'M', 'rows', 'est/meas', 'min', 'max'))
    for key in sorted(groups):
        v = groups[key]
        print('%-26s %-10s %5d %9.3f %7.3f %7.3f' % (key + (len(v), math.exp(sum(map(math.log, v)) / len(v)), min(v), max(v))))
    print('%d rows of %d shapes' % (sum(len(v) for v in groups.values()), len({(r[0], r[1]) for r in rows})))


if __name__ == '__main__':
    main()
