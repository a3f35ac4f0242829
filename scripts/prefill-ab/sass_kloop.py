#!/usr/bin/env python3
"""k-loop instruction counts of prefill_kernel instantiations (issue 5; used for branches prefill-dq and prefill-g1).

usage: scripts/prefill-ab/sass_kloop.py OBJ_OR_BINARY [FILTER_REGEX]
For every prefill_kernel whose demangled name matches FILTER_REGEX (default: all), takes the
backward branch whose span holds the most HGMMA (or HMMA: the mma.sync configs), i.e. the
do-while of the k loop (unrolled twice: 2 tiles per trip; of the spans with the most HGMMA the
shortest, see below), and prints: registers (cuobjdump
-res-usage), LDL/STL anywhere in the function, HGMMA count, the loop span's instruction count and
the count per tile (/ 2), plus the dequantization opcodes per tile (HADD2 HFMA2 HMUL2 LOP3 SHF PRMT IMAD).
Static counts (the refill branch of thread 0 included). CUOBJDUMP / CUFILT override the tools.
"""
import collections, os, re, subprocess, sys

OPS = ['HADD2', 'HFMA2', 'HMUL2', 'LOP3', 'SHF', 'PRMT', 'IMAD', 'IADD3', 'LDS', 'HGMMA']

def main():
    path = sys.argv[1]
    rx = re.compile(sys.argv[2] if len(sys.argv) > 2 else '.')
    tool = os.environ.get('CUOBJDUMP', '/opt/cutools/cuobjdump')
    dump = subprocess.run([tool, '-sass', path], capture_output=True, text=True, check=True).stdout
    res = subprocess.run([tool, '-res-usage', path], capture_output=True, text=True, check=True).stdout
    regs, fn = {}, None
    for line in res.splitlines():
        m = re.search(r'Function (\S+):', line)
        if m: fn = m.group(1)
        m = re.search(r'REG:(\d+)', line)
        if m and fn: regs[fn] = int(m.group(1))
    funcs, cur = {}, None
    for line in dump.splitlines():
        m = re.match(r'\s+Function : (.+?)\s*$', line)
        if m:
            cur = m.group(1) if 'prefill_kernel' in m.group(1) else None
            if cur: funcs[cur] = []
            continue
        m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', line)
        if cur and m: funcs[cur].append((int(m.group(1), 16), m.group(2)))
    names = list(funcs)
    dem = subprocess.run([os.environ.get('CUFILT', 'c++filt')], input='\n'.join(names), capture_output=True, text=True).stdout.split('\n')
    print('%-70s %4s %5s %5s %6s %6s  %s' % ('kernel <T,BM,WG,MB,ST,WGMMA,OV,MINB,ZEROS,XL,SCHED>', 'regs', 'spill', 'hgmma', 'loop', '/tile', ' '.join(OPS[:-1])))
    rows = []
    for name, d in zip(names, dem):
        m = re.search(r'prefill_kernel<(.*?)>\(', d)
        short = m.group(1) if m else d
        short = short.replace('__nv_bfloat16', 'bf16').replace('(w4a16::kernels::cuda::prefill_detail::XLoad)', 'xl')
        if not rx.search(short): continue
        ins = funcs[name]
        addr = {a: i for i, (a, _) in enumerate(ins)}
        spill = sum(1 for _, t in ins if re.search(r'\b(LDL|STL)\b', t))
        best = None
        for i, (a, t) in enumerate(ins):
            mm = re.search(r'\bBRA\b.*?0x([0-9a-f]+)\s*$', t)
            if not mm: continue
            tgt = int(mm.group(1), 16)
            if tgt >= a or tgt not in addr: continue
            body = ins[addr[tgt]:i + 1]
            n = sum(1 for _, x in body if re.search(r'\b(HGMMA|HMMA)\b', x))
            if n == 0: continue
            # most tensor-core instructions, then the shortest span: ptxas moves the retry jumps of
            # the mbarrier waits to the function's end, whose backward branches span everything
            if best is None or (n, -len(body)) > best[0]: best = ((n, -len(body)), body)
        best = best[1] if best else None
        hg = sum(1 for _, t in ins if 'HGMMA' in t)
        if best is None:
            rows.append((short, '%-70s %4s %5d %5d   (no k loop found)' % (short, regs.get(name, '?'), spill, hg)))
            continue
        c = collections.Counter(re.sub(r'^@!?U?P\w+\s+', '', t).split()[0].split('.')[0] for _, t in best)
        rows.append((short, '%-70s %4s %5d %5d %6d %6.1f  %s' % (short, regs.get(name, '?'), spill, hg, len(best), len(best) / 2,
                                                       ' '.join('%s=%g' % (o, c[o] / 2) for o in OPS[:-1]))))
    for _, r in sorted(rows): print(r)

if __name__ == '__main__':
    main()
