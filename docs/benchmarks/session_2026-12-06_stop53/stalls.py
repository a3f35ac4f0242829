"""Summarise an `ncu --page source --csv --print-source sass` export: stall reasons and opcodes by warp samples."""
import collections
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]
ix = {h: i for i, h in enumerate(hdr)}
tot = collections.Counter()
byop = collections.Counter()
n = 0
for r in rows[2:]:
    s = int(r[ix['Warp Stall Sampling (All Samples)']] or 0)
    n += s
    src = r[ix['Source']].split()
    op = (src[1] if src and src[0].startswith('@') else (src[0] if src else '?')).split('.')[0]
    byop[op] += s
    for h in hdr:
        if h.startswith('stall_') and '(Not' not in h:
            tot[h] += int(r[ix[h]] or 0)
print('  samples:', n)
print('  stalls:', ', '.join('%s %.1f%%' % (k[6:], 100 * v / max(n, 1)) for k, v in tot.most_common(10)))
print('  opcodes:', ', '.join('%s %.1f%%' % (k, 100 * v / max(n, 1)) for k, v in byop.most_common(14)))
