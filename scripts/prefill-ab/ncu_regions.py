#!/usr/bin/env python3
"""Where a prefill_kernel launch spends its warp samples: before, in and after the k loop (issue 5).

usage: scripts/prefill-ab/ncu_regions.py SOURCE.csv[.gz] ... [--hot N] [--mix]

Input: `ncu --import X.ncu-rep --page source --csv --print-source sass` of one launch profiled with
--section SourceCounters (and WarpStateStats). The k loop is the backward branch whose span holds the
most HGMMA (the shortest of those). Prints, per region (prologue / kloop / epilogue), its share of the
warp stall samples and of the executed warp instructions and its six largest stall reasons; --hot N
adds the N instructions with the most samples per region, --mix the k loop's opcode mix.
Used for stop 22 (docs/benchmarks/prefill.md, "2026-12-03, stop 22").
"""
import collections
import csv
import gzip
import re
import sys


def load(path):
    opener = gzip.open if path.endswith('.gz') else open
    rows = list(csv.reader(opener(path, 'rt')))
    hdr, data = rows[1], rows[2:]
    ci = {h: i for i, h in enumerate(hdr)}
    num = lambda r, h: int(r[ci[h]] or 0)
    ins = [dict(src=r[ci['Source']].strip(), addr=int(r[ci['Address']], 16),
                samples=num(r, 'Warp Stall Sampling (All Samples)'), execs=num(r, 'Instructions Executed'),
                stalls={h[6:]: num(r, h) for h in hdr if h.startswith('stall_') and 'Not Issued' not in h})
           for r in data]
    return ins


def k_loop(ins):
    at = {x['addr']: i for i, x in enumerate(ins)}
    best = None
    for i, x in enumerate(ins):
        m = re.search(r'BRA[^0-9]*(0x[0-9a-f]+)', x['src'])
        if not m or int(m.group(1), 16) not in at or at[int(m.group(1), 16)] >= i:
            continue
        j = at[int(m.group(1), 16)]
        key = (sum('HGMMA' in ins[q]['src'] for q in range(j, i + 1)), -(i - j))
        if best is None or key > best[0]:
            best = (key, j, i)
    if best is None or best[0][0] == 0:
        raise SystemExit('no backward branch around an HGMMA: not a wgmma prefill kernel?')
    return best[1], best[2], best[0][0]


def main():
    args = sys.argv[1:]
    hot = int(args[args.index('--hot') + 1]) if '--hot' in args else 0
    mix = '--mix' in args
    paths = [a for i, a in enumerate(args) if not a.startswith('--') and (i == 0 or args[i - 1] != '--hot')]
    for path in paths:
        ins = load(path)
        lo, hi, n_hg = k_loop(ins)
        tot_s = sum(x['samples'] for x in ins) or 1
        tot_e = sum(x['execs'] for x in ins) or 1
        print(f'== {path}: {tot_s} samples, k loop = instructions {lo}..{hi} ({n_hg} HGMMA) of {len(ins)}')
        for name, rg in (('prologue', range(0, lo)), ('kloop', range(lo, hi + 1)), ('epilogue', range(hi + 1, len(ins)))):
            s = sum(ins[i]['samples'] for i in rg)
            e = sum(ins[i]['execs'] for i in rg)
            st = collections.Counter()
            for i in rg:
                st.update(ins[i]['stalls'])
            top = ', '.join(f'{k} {100 * v / max(s, 1):.0f}%' for k, v in st.most_common(6))
            print(f'  {name:9s} samples {100 * s / tot_s:5.1f}%  warp instructions {100 * e / tot_e:5.1f}%  [{top}]')
            for i in sorted(rg, key=lambda q: -ins[q]['samples'])[:hot]:
                print(f'      {i:5d} {ins[i]["samples"]:5d} samples {ins[i]["execs"]:8d} executed  {ins[i]["src"][:80]}')
        if mix:
            ops, e_loop = collections.Counter(), 0
            for i in range(lo, hi + 1):
                op = re.sub(r'^@!?U?P[T0-9]+\s+', '', ins[i]['src']).split()[0]
                ops[op] += ins[i]['execs']
                e_loop += ins[i]['execs']
            print('  k-loop opcode mix: ' + ', '.join(f'{op} {100 * v / max(e_loop, 1):.1f}%' for op, v in ops.most_common(14)))


if __name__ == '__main__':
    main()
