#!/usr/bin/env python3
"""Summarizes whole-process A/B runs of w4a16_bench_moe (scripts/moe-ab, the device call scripts).

usage: ab_compare.py DIR [BASE]
DIR holds the bench's CSVs named [moe_][KIND_]VARIANT_rN.csv (KIND, e.g. bf16uint4, groups the runs of one
configuration; VARIANT, without '_', names a build or knob setting; N the round). Per (KIND, T): every round's `chosen` fused_us of each
variant, the ratio of its median to BASE's median (BASE: the variant named `base` if there is one, else the first name in
sort order), and the % of 4.4 TB/s on the touched bytes (touched_MB) of BASE and of each variant.
"""
import collections
import csv
import os
import re
import statistics
import sys

PEAK = 4.4e12  # bytes/s: the H200 read bandwidth every PERF.md percentage uses


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    folder = sys.argv[1]
    times = collections.defaultdict(list)  # (kind, T, variant) -> [us per round]
    touched = {}                           # (kind, T) -> MB
    variants = set()
    for f in sorted(os.listdir(folder)):
        m = re.fullmatch(r'(?:moe_)?(?:(.+)_)?([^_]+)_r(\d+)\.csv', f)
        if not m:
            continue
        kind, variant = m.group(1) or '', m.group(2)
        variants.add(variant)
        for row in csv.DictReader(open(os.path.join(folder, f))):
            if row.get('path') == 'chosen':
                times[(kind, int(row['T']), variant)].append(float(row['fused_us']))
                touched[(kind, int(row['T']))] = float(row.get('touched_MB') or 0)
    if not times:
        sys.exit('no w4a16_bench_moe CSVs named [moe_][KIND_]VARIANT_rN.csv in ' + folder)
    base = sys.argv[2] if len(sys.argv) == 3 else ('base' if 'base' in variants else sorted(variants)[0])
    order = [base] + sorted(variants - {base})
    pct = lambda kind, T, us: 100 * touched[(kind, T)] * 1e6 / (us * 1e-6) / PEAK
    for kind, T in sorted({k[:2] for k in times}):
        if not times[(kind, T, base)]:
            continue
        b = statistics.median(times[(kind, T, base)])
        cells = []
        for v in order:
            if not times[(kind, T, v)]:
                continue
            med = statistics.median(times[(kind, T, v)])
            cells.append('%s %s (%.3f, %.1f%%)' % (v, ' '.join('%.2f' % x for x in times[(kind, T, v)]), med / b, pct(kind, T, med)))
        print('%-12s T=%-5d ' % (kind or '-', T) + ' | '.join(cells))


if __name__ == '__main__':
    main()
