#!/usr/bin/env python3
"""The interleaved rows of prefill_bench CSVs (W4A16_PREFILL_INTERLEAVE: rows *_il, and *_il:NAME=VALUE for
W4A16_PREFILL_INTERLEAVE_ENV) as one table: per (shape, M) and row, the median time over the files (one file per
process), each file's ratio cuBLAS fp16 / row (> 1: faster than cuBLAS), taken within its own file, where the
replays alternated, and the largest rel_err over the files (each int4 member re-checked after its replays).
--peer ROW divides by another row instead (bf16 runs: --peer cublas_bf16_il, the peer of the same dtype).
Usage: il_table.py a.csv [b.csv ...] [--markdown] [--peer ROW]"""
import csv
import statistics
import sys
from collections import defaultdict


def main(argv):
    peer_row = 'cublas_f16_il'
    if '--peer' in argv:
        i = argv.index('--peer')
        if i + 1 >= len(argv):
            print('--peer needs a row name (e.g. cublas_bf16_il)', file=sys.stderr)
            return 2
        peer_row = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    files = [a for a in argv if not a.startswith('--')]
    markdown = '--markdown' in argv
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    times = defaultdict(list)   # (shape, M, kernel) -> us per file
    ratios = defaultdict(list)  # (shape, M, kernel) -> cuBLAS / us per file
    errs = defaultdict(float)   # (shape, M, kernel) -> the largest rel_err over the files
    for path in files:
        rows = [r for r in csv.DictReader(open(path)) if '_il' in r['kernel']]
        peer = {(r['shape'], r['M']): float(r['us']) for r in rows if r['kernel'] == peer_row}
        for r in rows:
            key = (r['shape'], int(r['M']), r['kernel'])
            times[key].append(float(r['us']))
            errs[key] = max(errs[key], float(r.get('rel_err') or 0))
            if (r['shape'], r['M']) in peer:
                ratios[key].append(peer[(r['shape'], r['M'])] / float(r['us']))
    if not times:
        print('no interleaved rows (run prefill_bench with W4A16_PREFILL_INTERLEAVE)', file=sys.stderr)
        return 1
    if not any(ratios.values()):
        print('no %s rows in these files (--peer names the row to divide by)' % peer_row, file=sys.stderr)
        return 1
    default_peer = peer_row == 'cublas_f16_il'
    label, md_label = ('cuBLAS', 'cuBLAS fp16') if default_peer else (peer_row, peer_row)  # the text / markdown column names
    order = sorted(times, key=lambda k: (k[0], k[1], -statistics.median(ratios[k] or [0])))
    if markdown:
        print('| shape | M | row | us (median) | x %s per process | rel_err (max) |' % md_label)
        print('|---|---|---|---|---|---|')
    for k in order:
        rat = ' '.join('%.3f' % x for x in ratios[k])
        if markdown:
            print('| %s | %d | %s | %.1f | %s | %.1e |' % (k[0], k[1], k[2], statistics.median(times[k]), rat, errs[k]))
        else:
            print('%-18s M=%-5d %-56s %9.1f us  x %s %s  err %.1e' % (k[0], k[1], k[2][:56], statistics.median(times[k]), label, rat, errs[k]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
