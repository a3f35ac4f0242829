#!/usr/bin/env python3
"""Best time per tile of a `prefill_bench out.csv tune_tma` run, one line per (shape, M).

usage: tune_best.py TUNE.csv[.gz]
Per (shape, M): cuBLAS fp16 us, then for every forced tile the fastest split (`tile=us:sN`), then the
default plan's us (the faster of its two timings: first and after the tiles) and description. The candidates for prefill_plan.cu kMeasuredPrefillPlans are the lines
where a tile beats the default by more than the runs' spread (~3-5% on one tune sample: A/B before
adding an entry, scripts/prefill-ab/ab_table.py).
"""
import csv, gzip, sys


def main():
    path = sys.argv[1]
    rows = csv.DictReader(gzip.open(path, 'rt') if path.endswith('.gz') else open(path))
    best = {}  # (shape, M) -> {tile: (us, split or plan)}
    for r in rows:
        d = best.setdefault((r['shape'], int(r['M'])), {})
        us, kernel = float(r['us']), r['kernel']
        if kernel.startswith('cublas'):
            d['cublas'] = (us, '')
        elif kernel in ('cuda_prefill', 'cuda_prefill_again'):  # the default plan, timed first and again last: the faster
            if 'default' not in d or us < d['default'][0]:
                d['default'] = (us, r['plan'])
        else:
            _, tile, split = kernel.split(':')
            if tile not in d or us < d[tile][0]:
                d[tile] = (us, split)
    for (shape, m), d in sorted(best.items()):
        short = lambda t: t.replace('wgmma_', '').replace('_tma_ei', '').replace('_tma', '')
        tiles = ' '.join('%s=%.1f:%s' % (short(t), us, sp) for t, (us, sp) in d.items() if t not in ('cublas', 'default'))
        line = '%s %d cublas=%.1f %s' % (shape, m, d.get('cublas', (float('nan'),))[0], tiles)
        if 'default' in d:
            line += ' | default %.1f %s' % d['default']
        print(line)


if __name__ == '__main__':
    main()
