#!/usr/bin/env python3
"""Grid search of the bulk decode kernel's plan cost (src/kernels/cuda/decode/decode_plan.cu, bulk_cost) on a
forced-plan sweep: w4a16_bench_gpu CSVs run with W4A16_DECODE_BULK=1 W4A16_DECODE_BULK_PLAN=wn,b for every
plan (scripts/decode-bulk-sweep; docs/benchmarks/session_2026-12-04_stop29/call2.sh, call3.sh). Rows whose plan
column is not the forced bulk plan (it did not fit) count as the automatic plan's and are kept as what ran.

usage: fit_bulk_plan.py 'glob of CSVs' [item_tiles inflight_bytes]
Prints the ten best (item_tiles, inflight) pairs by the sum over (shape, M) of log(chosen / best measured),
then, for the given pair (default the best), every point where the cost's pick is > 2% slower than the best.
The cost mirrors bulk_cost: tiles the busiest SM streams + item_tiles per round of items, times
inflight / bytes in flight where the ring holds less (the stage count as the sweep's plan column reports it).
"""
import csv
import glob
import math
import re
import sys


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    shapes, rows, plans = {}, {}, {}
    for f in glob.glob(sys.argv[1]):
        for r in csv.DictReader(open(f)):
            if not r["plan"].startswith("bulk"):
                continue
            d = dict(re.findall(r"(\w+)=(\d+)", r["plan"]))
            key = (r["shape"], int(r["m"]), int(d["warps_n"]), int(d["blocks_per_sm"]))
            us = float(r["us"])
            if key not in rows or us < rows[key]:
                rows[key] = us
            plans[key] = d
            shapes[r["shape"]] = (int(r["n"]), int(r["k"]))
    groups = sorted(set(k[:2] for k in rows))

    def feat(key, sms=132):
        shape, m, wn, b = key
        n, k = shapes[shape]
        nt, kt = (n + 63) // 64 * 4, (k + 63) // 64
        span = (8 // wn) * 4
        item = (kt + span - 1) // span * span * wn
        rb = (nt + wn - 1) // wn
        grid = min(rb, sms * b)
        rounds = (rb + grid - 1) // grid
        per_sm = min(b, (grid + sms - 1) // sms)
        inflight = per_sm * (int(plans[key]["stages"]) - 1) * 16384
        return per_sm * rounds * item, rounds, inflight

    def choose(g, ic, th):
        best = None
        for key in rows:
            if key[:2] != g:
                continue
            tiles, rounds, inflight = feat(key)
            c = tiles + ic * rounds
            if inflight < th:
                c *= th / inflight
            cand = (round(c, 6), -inflight, rows[key], key)
            best = cand if best is None or cand < best else best
        return best

    res = []
    for ic in (16, 24, 32, 48, 64, 96):
        for th in (48e3, 64e3, 96e3, 128e3, 160e3, 192e3, 256e3):
            tot, worst = 0.0, 1.0
            for g in groups:
                ch = choose(g, ic, th)[2]
                best = min(rows[k] for k in rows if k[:2] == g)
                tot += math.log(ch / best)
                worst = max(worst, ch / best)
            res.append((tot, worst, ic, th))
    res.sort()
    for r in res[:10]:
        print("sum log %.3f  worst %.3f  item_tiles %d  inflight %d" % r)
    ic, th = (float(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) == 4 else res[0][2:]
    print("points more than 2%% off at item_tiles %g inflight %g:" % (ic, th))
    for g in groups:
        c = choose(g, ic, th)
        best = min((rows[k], k) for k in rows if k[:2] == g)
        if c[2] / best[0] > 1.02:
            print(" ", g, "pick", c[3][2:], "%.2f us" % c[2], "best", best[1][2:], "%.2f us" % best[0], "%.3fx" % (c[2] / best[0]))


if __name__ == "__main__":
    main()
