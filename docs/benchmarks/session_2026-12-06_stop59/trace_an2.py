#!/usr/bin/env python3
"""Summarizes W4A16_PREFILL_TRACE files of branch prefill-trace-epi (stop 59 call 5): per launch (the last two of each
file, warm), the whole tiles' k loops and what follows an item's end: the next item's first loads issued, the epilogue
done (in the order the launch ran them: W4A16_PREFILL_EPI_FIRST), the next item's start. Lines: 'launch ...' headers,
then 'cta item start kdone end loads epi' in ns. Usage: trace_an2.py trace_*.txt"""
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
    return 'min %.2f med %.2f max %.2f' % (v[0], v[len(v) // 2], v[-1]) if v else '-'


for path in sys.argv[1:]:
    ls = list(launches(path))
    print('==', path, len(ls), 'launches')
    for l in ls[-2:]:
        h, r = l['hdr'], l['rows']
        if not r:
            continue
        t0 = min(x[2] for x in r)
        print(' ', h)
        print('   span %.1f us' % ((max(max(x[4], x[5], x[6]) for x in r) - t0) / 1e3))
        print('   k loop %s us' % q([(x[3] - x[2]) / 1e3 for x in r]))
        print('   item end -> next loads issued %s us' % q([(x[5] - x[4]) / 1e3 for x in r]))
        print('   item end -> epilogue done %s us' % q([(x[6] - x[4]) / 1e3 for x in r]))
        by_cta = {}
        for x in sorted(r, key=lambda x: x[2]):
            by_cta.setdefault(x[0], []).append(x)
        gaps = [(b[2] - a[4]) / 1e3 for v in by_cta.values() for a, b in zip(v, v[1:])]
        print('   item end -> next item start %s us' % q(gaps))
        firsts = [v[0] for v in by_cta.values()]
        later = [x for v in by_cta.values() for x in v[1:]]
        print('   k loop: first items %s us, later items %s us' % (q([(x[3] - x[2]) / 1e3 for x in firsts]), q([(x[3] - x[2]) / 1e3 for x in later])))
