#!/usr/bin/env python3
"""Reads `cuobjdump -sass` of decode_small.cu.o on stdin; prints per small kernel its SASS
instruction count and the counts of HMMA, LDSM (ldmatrix), LDG, LDL/STL (spills), BAR."""
import re
import sys
from collections import Counter

funcs = {}
cur = None
for line in sys.stdin:
    m = re.match(r"\s+Function : (\S+)", line)
    if m:
        k = re.search(r"decode_small_kernelILb([01])ELi([12])ELb([01])ELb([01])ELi(\d+)", m.group(1))
        cur = f"bf16={k.group(1)} MB={k.group(2)} zeros={k.group(3)} g32={k.group(4)} T={k.group(5)}" if k else None
        if cur:
            funcs[cur] = Counter()
        continue
    m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", line)
    if m and cur:
        op = m.group(1)
        c = funcs[cur]
        c["all"] += 1
        for key in ("HMMA", "LDSM", "LDG", "LDL", "STL", "BAR", "LDGSTS"):
            if op.startswith(key):
                c[key] += 1
print(f"{'small kernel':40s} {'SASS':>5s} {'HMMA':>5s} {'LDSM':>5s} {'LDG':>4s} {'LDGSTS':>6s} {'BAR':>4s} {'LDL/STL':>8s}")
for f in sorted(funcs, key=lambda s: (int(s.split('T=')[1]), s)):
    c = funcs[f]
    print(f"{f:40s} {c['all']:5d} {c['HMMA']:5d} {c['LDSM']:5d} {c['LDG']:4d} {c['LDGSTS']:6d} {c['BAR']:4d} {c['LDL']:>3d}/{c['STL']:<3d}")
