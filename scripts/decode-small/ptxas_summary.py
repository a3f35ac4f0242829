#!/usr/bin/env python3
"""Reads `nvcc -Xptxas -v` output on stdin; prints one line per kernel: its configuration,
registers, spill bytes (decode-small pack step; the small kernels decoded from their mangled names)."""
import re
import sys

cur = None
spill = ""
rows = []
for line in sys.stdin:
    m = re.search(r"Compiling entry function '(\S+)'", line)
    if m:
        name = m.group(1)
        k = re.search(r"decode_small_kernelILb([01])ELi([12])ELb([01])ELb([01])ELi(\d+)", name)
        cur = (f"small bf16={k.group(1)} MB={k.group(2)} zeros={k.group(3)} g32={k.group(4)} T={k.group(5)}" if k else name[-70:])
        continue
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and cur:
        spill = f"spill st/ld {m.group(1)}/{m.group(2)}"
        continue
    m = re.search(r"Used (\d+) registers", line)
    if m and cur:
        rows.append(f"{cur:50s} regs {m.group(1):>3s}  {spill}")
        cur = None
print("\n".join(sorted(rows)))
