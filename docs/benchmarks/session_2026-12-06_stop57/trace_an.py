#!/usr/bin/env python3
"""Summarizes W4A16_PREFILL_TRACE files of branch prefill-trace (stop 57 calls 2-4): per launch (the last two of each
file, warm), the span, the whole tiles' k loops and what follows them, when each CTA's last whole tile ended, and the
tail parts' start, k loop, reduce and end. Lines: 'launch ...' headers, then 'cta item start kdone end' in ns.
Usage: trace_an.py trace_*.txt"""
import statistics as st
import sys


def launches(path):
    cur = None
    for line in open(path):
        if line.startswith('launch'):
            if cur:
                yield cur
            cur = {'hdr': line.strip(), 'rows': []}
        elif cur is not None and line.strip():
            cur['rows'].append(tuple(map(int, line.split())))
    if cur:
        yield cur


def q(v):
    v = sorted(v)
    return 'min %.1f med %.1f max %.1f' % (v[0], v[len(v) // 2], v[-1])


for path in sys.argv[1:]:
    ls = list(launches(path))
    print('==', path, len(ls), 'launches')
    for l in ls[-2:]:
        h, r = l['hdr'], l['rows']
        if not r:
            continue
        full = int(h.split('full=')[1].split()[0])
        t0 = min(x[2] for x in r)
        print(' ', h)
        print('   span %.1f us' % ((max(x[4] for x in r) - t0) / 1e3))
        whole = [x for x in r if x[1] < full]
        parts = [x for x in r if x[1] >= full]
        print('   whole tiles %d: k loop %s us; k end -> item end %s us' % (
            len(whole), q([(x[3] - x[2]) / 1e3 for x in whole]), q([(x[4] - x[3]) / 1e3 for x in whole])))
        last = {}
        for x in whole:
            last[x[0]] = max(last.get(x[0], 0), x[4])
        print('   each CTA\'s last whole tile ends at %s us' % q([(v - t0) / 1e3 for v in last.values()]))
        by_cta = {}
        for x in sorted(r, key=lambda x: x[2]):
            by_cta.setdefault(x[0], []).append(x)
        gaps = [(b[2] - a[4]) / 1e3 for v in by_cta.values() for a, b in zip(v, v[1:])]
        if gaps:
            print('   item end -> next item start (the store, the next loads) %s us' % q(gaps))
        if parts:
            print('   tail parts %d: start %s us; k loop %s us; reduce %s us; end %s us' % (
                len(parts), q([(x[2] - t0) / 1e3 for x in parts]), q([(x[3] - x[2]) / 1e3 for x in parts]),
                q([(x[4] - x[3]) / 1e3 for x in parts]), q([(x[4] - t0) / 1e3 for x in parts])))
