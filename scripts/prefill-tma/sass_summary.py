#!/usr/bin/env python3
"""Per-kernel SASS facts of the prefill kernels, from `cuobjdump -sass OBJ_OR_BINARY` on stdin:
HGMMA count, WARPGROUP.DEPBAR (wgmma waits), MEMBAR (the proxy fence of the cp.async configs),
FENCE.VIEW.ASYNC, UTMALDG (TMA loads), SYNCS (mbarrier ops), BAR.SYNC (CTA barriers), LDGSTS
(cp.async). The TMA configs (XLoad 1 = tma, 2 = tma_eb) should show UTMALDG and SYNCS and no
MEMBAR; the cp.async configs (XLoad 0) one MEMBAR per unrolled k tile.
Usage: cuobjdump -sass prefill_gpu_test | sass_summary.py"""
import re
import sys

txt = sys.stdin.read()
parts = re.split(r"\n\s*Function : ", txt)[1:]
pat = re.compile(r"prefill_kernelI(6__half|13__nv_bfloat16)Li(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELb(\d)ELb(\d)ELi(\d+)ELb(\d)ELNS2_5XLoadE(\d)E")
xl = {"0": "cp_async", "1": "tma", "2": "tma_eb", "3": "nofence"}
print(f"{'dtype':5s} {'zeros':5s} {'BM':>3s} {'WG':>2s} {'MB':>2s} {'ST':>2s} {'wgmma':5s} {'ov':2s} {'occ':3s} {'x_load':8s}  HGMMA DEPBAR MEMBAR FENCE.VIEW UTMALDG SYNCS BAR.SYNC LDGSTS")
rows = []
for p in parts:
    name = p.split("\n", 1)[0]
    m = pat.search(name)
    if not m:
        continue
    t, bm, wg, mb, st, wgmma, ov, occ, zeros, x = m.groups()
    c = lambda s: len(re.findall(s, p))
    rows.append((("f16" if t == "6__half" else "bf16"), zeros, int(bm), wg, mb, st, wgmma, ov, occ, xl[x],
                 c(r"\bHGMMA\."), c(r"WARPGROUP\.DEPBAR"), c(r"\bMEMBAR"), c(r"FENCE\.VIEW\.ASYNC"), c(r"\bUTMALDG"), c(r"\bSYNCS\."),
                 c(r"\bBAR\.SYNC"), c(r"\bLDGSTS")))
for r in sorted(rows, key=lambda r: (r[9], r[0], r[1], -r[2])):
    print(f"{r[0]:5s} {r[1]:5s} {r[2]:3d} {r[3]:>2s} {r[4]:>2s} {r[5]:>2s} {r[6]:5s} {r[7]:2s} {r[8]:3s} {r[9]:8s}  {r[10]:5d} {r[11]:6d} {r[12]:6d} {r[13]:10d} {r[14]:7d} {r[15]:5d} {r[16]:8d} {r[17]:6d}")
tma = [r for r in rows if r[9] in ("tma", "tma_eb")]
print(f"# {len(rows)} prefill kernels; TMA kernels with MEMBAR: {sum(1 for r in tma if r[12])} of {len(tma)}; "
      f"TMA kernels without UTMALDG: {sum(1 for r in tma if not r[14])}; wgmma kernels without HGMMA: "
      f"{sum(1 for r in rows if r[6] == '1' and not r[10])}")
