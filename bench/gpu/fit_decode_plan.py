#!/usr/bin/env python3
"""The decode plan's cost model (src/kernels/cuda/decode/decode_plan.cu, plan_cost) against a forced-plan
sweep (scripts/decode-plan-sweep): for every (shape, M) of the sweep, the plan the model picks among
the measured variants, its time over the fastest measured one, and the sum of log ratios. Prints the
old constants (before 2026-12-02 night) and the ones in decode_plan.cu; --search refits them by random
search (coordinate refinement after), as was done for the constants in decode_plan.cu.

    python3 bench/gpu/fit_decode_plan.py docs/benchmarks/decode_plans_2026-12-02_night.csv [--search] [-v]

A sweep with a `forced_plan` column (scripts/session-check's plans.csv, 2026-12-03 on) carries each
plan's own description (the `plan` column: splits, tiles per warp, row blocks, shared memory,
xstream), so the plan is read from it rather than rebuilt here: such sweeps score the 1..8-token
constants (TOKENS8 / decode_plan.cu kCost8) of the 8-tile-step kernel.
"""
import collections
import csv
import math

import fit_search

SMS = 132
SHAPES = {"qwen0.5b.qkv": (1152, 896), "qwen0.5b.o": (896, 896), "qwen0.5b.gate_up": (9728, 896), "qwen0.5b.down": (896, 4864),
          "llama8b.qkv": (6144, 4096), "llama8b.o": (4096, 4096), "llama8b.gate_up": (28672, 4096),
          "llama8b.down": (4096, 14336), "8192x8192": (8192, 8192), "llama70b.gate_up": (57344, 8192)}
#            c0   c1   cs    wl   cf    cc   xf    st
OLD = (30, 240, 1.3, 1.2, 0.15, 0.6, 1.03, 700)
NOW = (17, 30, 1.07, 0.2, 0.13, 0.2, 1.11, 2100)
TOKENS8 = NOW  # decode_plan.cu kCost8 (1..8 tokens); NOW stays the 9..16-token set


def parse_plan(desc):  # DecodePlan::describe() of the streaming kernel
    f = dict(kv.split("=") for kv in desc.split() if "=" in kv)
    wk, tpw = int(f["warps_k"]), int(f["tiles_per_warp"])
    return dict(s=int(f["splits"]), tpw=tpw, bt=tpw * wk, rb=int(f["row_blocks"]), xs="xstream" in desc.split(), smem=int(f["smem"]))


def make_plan(n, k, wn, s, m, xs):  # decode_plan.cu make_plan (uint4b8, g >= 64, ring depth 3, x as token rows)
    nt, kt = (n + 63) // 64 * 4, (k + 63) // 64
    wk = 8 // wn
    tpw = (-(-kt // s) + wk - 1) // wk
    bt = tpw * wk
    xs = xs and wn == 8
    ring = 8 * 3 * (2048 + 4 * 8 * 4)
    smem = (3 * m * (4 * 128 + 16) if xs else m * (bt * 128 + 16)) + ring + 8 * (1 if m <= 8 else 2) * 512
    return dict(s=-(-kt // bt), tpw=tpw, bt=bt, rb=-(-nt // wn), xs=xs, smem=smem, grid_rows=-(-nt // wn))


def cost(p, m, c):  # decode_plan.cu plan_cost
    c0, c1, cs, wl, cf, cc, xf, st = c
    bps = max(1, min(2, (227 * 1024) // (p["smem"] + 1024)))
    slots, blocks = SMS * bps, p["rb"] * p["s"]
    waves = -(-blocks // slots)
    per_sm = min(bps, -(-min(blocks, slots) // SMS))
    cycles = per_sm * 8 * p["tpw"] * (c0 + c1 / (per_sm * 8)) * (cs if m > 8 else 1.0)
    stage = 0 if p["xs"] else -(-(m * p["bt"] * 8) // (8 * 256)) * st
    return waves * ((cycles + stage) / 1980 + wl) * (1 + cf * (p["s"] - 1)) * (xf if p["xs"] else 1) + (cc if p["s"] > 1 else 0)


def pick(shape, m, c, measured, plans=None):
    n, k = SHAPES[shape]
    best = None
    for v in measured:
        if v == "default":
            continue
        if plans is not None:
            p = plans[(shape, m, v)]
        else:
            f = [int(x) for x in v.split(",")]
            p = make_plan(n, k, f[0], f[1], m, len(f) > 2 and f[2] == 1)
            if p["smem"] > 200 * 1024 or p["s"] != f[1]:
                continue
        e = cost(p, m, c)
        if best is None or e < best[0] - 1e-9:
            best = (e, v)
    return best[1]


def score(d, c, verbose=False, plans=None):
    tot, worst = 0.0, 1.0
    for (shape, m), v in sorted(d.items()):
        best = min(t for name, t in v.items() if name != "default")
        name = pick(shape, m, c, v, plans)
        r = v[name] / best
        tot, worst = tot + math.log(r), max(worst, r)
        if verbose and r > 1.03:
            print(f"  {shape:17s} M={m:2d} picks {name:6s} {v[name]:7.2f} us, best {best:7.2f}: x{r:.3f}")
    return tot, worst


def main():
    a = fit_search.parse_args(__doc__)
    d, plans = collections.defaultdict(dict), None
    rows = list(csv.DictReader(open(a.csv)))
    if rows and "forced_plan" in rows[0]:  # plans read from their descriptions (module docstring)
        plans = {}
        for r in rows:
            if r["kernel"] == "cuda_decode" and r["shape"] in SHAPES and r["plan"] and not r["plan"].startswith("small"):
                key = (r["shape"], int(r["m"]))
                d[key][r["forced_plan"]] = float(r["us"])
                plans[key + (r["forced_plan"],)] = parse_plan(r["plan"])
        sets = (("decode_plan.cu 1..8-token constants", TOKENS8),)
        start = TOKENS8
    else:
        for r in rows:
            if r["kernel"].startswith("cuda_decode") and r["shape"] in SHAPES:
                d[(r["shape"], int(r["m"]))][r["variant"]] = float(r["us"])
        sets = (("old constants", OLD), ("decode_plan.cu constants", NOW))
        start = NOW
    for label, c in sets:
        tot, worst = score(d, c, a.v, plans)
        print(f"{label}: {len(d)} points, sum of log(picked / best) {tot:.2f}, worst x{worst:.3f}")
    if a.search:
        lo, hi = [5, 0, 1.0, 0.0, 0.0, 0.0, 0.7, 0], [60, 600, 2.0, 3.0, 0.4, 2.0, 1.3, 3000]
        best = fit_search.search(lambda c: score(d, c, plans=plans)[0], start, lo, hi, 4000, 1500, 1)
        print("search:", score(d, best[1], plans=plans), [round(x, 3) for x in best[1]])
        if a.v:
            score(d, best[1], True, plans)


if __name__ == "__main__":
    main()
