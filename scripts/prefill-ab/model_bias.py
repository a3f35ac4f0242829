#!/usr/bin/env python3
"""How far the prefill cost model's estimates sit from the tunes' measurements, per tile and token range (issue 5).

usage: scripts/prefill-ab/model_bias.py PREFILL_DQ_AB TUNE.csv[.gz] ...
Takes the split-1 rows of `prefill_bench tune_tma` CSVs (every forced tile at split 1), asks
`PREFILL_DQ_AB estimate` (no device needed) for the model's estimate of the same tile and M, and prints
estimate / measured per (tile, token range): the geometric mean, min and max. A tile the model rates
better than it runs, relative to the others in the same range, is one it will pick wrongly there.
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


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = []
    for path in sys.argv[2:]:
        f = gzip.open(path, 'rt') if path.endswith('.gz') else open(path)
        for r in csv.DictReader(f):
            if not r['kernel'].startswith('cuda_prefill:') or not r['kernel'].endswith(':s1'):
                continue
            tile = r['kernel'].split(':')[1]
            rows.append((int(r['N']), int(r['K']), int(r['M']), tile, float(r['us'])))
    query = ''.join('%d %d %d %s 1\n' % r[:4] for r in rows)
    est = subprocess.run([sys.argv[1], 'estimate'], input=query, capture_output=True, text=True, check=True).stdout.split()
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
