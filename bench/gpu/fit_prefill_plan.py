#!/usr/bin/env python3
"""The prefill plan's cost model (src/kernels/cuda/prefill/prefill_plan.cu, prefill_plan_estimate_us) against
`prefill_bench out.csv tune_tma` (every TMA tile x splits 1..8): for every (shape, M), the measured
time of the plan the model picks among the candidates allowed by the workspace bound
(split x round_up(M, bm) <= 512), over the fastest such candidate; and the same for the
default plan of the run (the rule of 2026-12-02). --search refits the constants.

    python3 bench/gpu/fit_prefill_plan.py docs/benchmarks/night_2026-12-02/prefill_tune_tma_r3.csv [--search] [-v]

The split term has one pair of constants per reduce mode (prefill_plan.cu kSplitKernel* / kSplitCluster*):
tune_tma measures the mode W4A16_PREFILL_SPLIT_REDUCE forces. With `--cluster CSV2 --clusters LOG`
(CSV = the run with =kernel, CSV2 = the run with =cluster, LOG = prefill_gpu_test output with its
"resident clusters" lines) every split is a candidate in both modes, the cluster's waves counted over
the resident clusters, as prefill_plan does; --search then refits the two split terms (tile constants
kept).

    python3 bench/gpu/fit_prefill_plan.py kernel.csv --cluster cluster.csv --clusters prefill_gpu_test.log --search [--loso]

--loso: each shape left out of the search in turn, its points scored with the constants fitted on
the others (how far a refit generalizes). --cluster picks among every tile x split 1..8 x mode as
prefill_plan does and scores a pick the run did not time as a 10% loss (printed with -v): before
stop 22 it ranked the measured candidates only, and tune_tma timed splits 1/2/3/4/6/8 (1/2 at
M = 1024), so a refit could prefer an untimed split (llama8b.qkv M = 32 / 64 went to split 5 and
measured 1.07-1.09x slower through the registry); tune_tma now times every split at every M.

--table MARGIN (with --cluster; CSVs of several runs separated by commas): prefill_plan.cu's
kMeasuredPrefillPlans, an entry wherever the fastest timed plan beats the model's pick by more than
MARGIN; --drop / --force SHAPE:M,... leave points out / give them an entry whatever the margin (where
an A/B through prefill_dq_ab contradicted the tune run).

A `prefill_bench out.csv reduce_ab` CSV (rows ab_<variant>:s<split>) instead gets a
least-squares fit of the split term alone per variant: measured time minus the model's time without
the split term (tile constants as in prefill_plan.cu), against the MB of fp32 partials.
"""
import collections
import csv
import gzip
import math

import fit_search

SHAPES = {"qwen0.5b.qkv": (1152, 896), "qwen0.5b.o": (896, 896), "qwen0.5b.gate_up": (9728, 896), "qwen0.5b.down": (896, 4864),
          "llama8b.qkv": (6144, 4096), "llama8b.o": (4096, 4096), "llama8b.gate_up": (28672, 4096),
          "llama8b.down": (4096, 14336), "8192x8192": (8192, 8192), "llama70b.gate_up": (57344, 8192)}
TILES = {"wgmma_bm256_bn128_s5_ov_tma": (256, 128, 1), "wgmma_bm128_bn256_s6_ov_tma": (128, 256, 1),
         "wgmma_bm64_bn128_s6_ov_occ2_tma": (64, 128, 2), "wgmma_bm128_bn128_s8_ov_tma": (128, 128, 1)}
NAMES = list(TILES)
# Tiles the measured table may take but the cost model never picks (prefill_plan.cu kModelTiles leaves them out; since stop 27
# the model also weighs the 2-CTA bm128_bn128 up to 128 tokens, kModelSmallMTiles, which this fit does not score yet):
# read from the tune CSVs for --table only, never scored or fitted.
TABLE_ONLY = {"wgmma_bm128_bn128_s4_ov_occ2_tma": (128, 128, 2), "wgmma_bm192_bn192_s6_ov_tma": (192, 192, 1)}
ALL_TILES = {**TILES, **TABLE_ONLY}
# t_tile per TILES entry, launch, kernel reduce, its us per MB of partials, cluster reduce, its us
# per MB (prefill_plan.cu; estimate() uses the kernel reduce's pair)
NOW = (0.73, 0.82, 0.65, 1.2, 1.6, 3.815, 0.372, 2.347, 0.214, 0.485, 0.245)  # + cluster us per rank beyond 2, kernel's


def estimate(shape, m, tile, split, c):
    """The single-mode model of the first fits: c[:7] (tiles, launch, the kernel reduce's fixed and
    per-MB split term), no per-rank term."""
    return estimate_mode(shape, m, tile, split, "kernel", tuple(c[:7]) + (0.0, 0.0, 0.0, 0.0), None)


def allowed(m, tile, s):
    bm = ALL_TILES[tile][0]
    return s == 1 or s * -(-m // bm) * bm <= 512


def score(d, c, verbose=False):
    tot, worst = 0.0, 1.0
    for (shape, m), v in sorted(d.items()):
        ok = {key: t for key, t in v.items() if allowed(m, *key)}
        best = min(ok.values())
        key = min(ok, key=lambda kk: estimate(shape, m, kk[0], kk[1], c))
        r = ok[key] / best
        tot, worst = tot + math.log(r), max(worst, r)
        if verbose and r > 1.05:
            print(f"  {shape:17s} M={m:5d} picks {key[0]}:s{key[1]} {ok[key]:7.1f} us, best {best:7.1f}: x{r:.2f}")
    return tot, worst


def fit_split_term(rows):
    """reduce_ab rows: per variant, fixed + per_mb of the split term by least squares."""
    pts = collections.defaultdict(list)
    for r in rows:
        kern = r["kernel"]
        if not kern.startswith("ab_") or ":s" not in kern:
            continue
        variant, s = kern.split(":s")
        tile, m, s = r["plan"].split()[0], int(r["M"]), int(s)
        if tile not in TILES or s < 2 or r["shape"] not in SHAPES:
            continue
        n, _ = SHAPES[r["shape"]]
        no_split = estimate(r["shape"], m, tile, s, NOW[:5] + (0.0, 0.0))
        pts[variant].append((s * m * n * 4 / 1e6, float(r["us"]) - no_split))
    for variant, p in sorted(pts.items()):
        k = len(p)
        sx, sy = sum(x for x, _ in p), sum(y for _, y in p)
        sxx, sxy = sum(x * x for x, _ in p), sum(x * y for x, y in p)
        det = k * sxx - sx * sx
        if k < 2 or det == 0:
            print(f"{variant}: {k} points, no fit")
            continue
        per_mb = (k * sxy - sx * sy) / det
        fixed = (sy - per_mb * sx) / k
        print(f"{variant:12s} split term: {fixed:.2f} us + {per_mb:.3f} us/MB of partials ({k} points; prefill_plan.cu now {NOW[5]} + {NOW[6]})")


def tile_name(name):
    """A config name as TILES keys it: the k-loop order suffixes (_ei, _ei2: the early-issue twins that
    tune_tma measures since 2026-12-03 night) name the same tile and its estimate."""
    for suffix in ("_ei2", "_ei"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def read(path):
    """A text file, gzipped where its name ends in .gz (the session folders keep the tune CSVs so)."""
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load(paths, table_only=False):
    """paths: one tune_tma CSV or several separated by commas (runs at different token counts);
    table_only: the TABLE_ONLY tiles' rows too."""
    d, default = collections.defaultdict(dict), {}
    for r in (r for path in paths.split(",") for r in csv.DictReader(read(path))):
        key = (r["shape"], int(r["M"]))
        if r["kernel"] == "cuda_prefill":
            default[key] = float(r["us"])
        elif r["kernel"].startswith("cuda_prefill:"):
            _, tile, s = r["kernel"].split(":")
            tile = tile_name(tile)
            if tile in TILES or (table_only and tile in TABLE_ONLY):
                d[key][(tile, int(s[1:]))] = float(r["us"])
    return d, default


def resident_clusters(path):
    """{(tile, split): clusters} from the "resident clusters <tile>: s2=.. s3=.." lines of prefill_gpu_test."""
    out = {}
    for line in read(path):
        if line.startswith("resident clusters "):
            head, tail = line[len("resident clusters "):].split(":", 1)
            head = tile_name(head)
            for item in tail.split():
                s, v = item[1:].split("=")
                out[(head + "_tma" if not head.endswith("_tma") else head, int(s))] = int(v)
    return out


def estimate_mode(shape, m, tile, split, mode, c, cap):
    """The plan's estimate with the reduce mode: c[5:7] + c[10] the kernel's split term (us, us/MB, us per split
    beyond 2), c[7:10] the cluster's, whose waves count whole clusters over cap[(tile, split)] resident ones."""
    n, k = SHAPES[shape]
    bm, bn, occ = TILES[tile]
    kt = (k + 63) // 64
    kts = -(-kt // split)
    s = -(-kt // kts)
    ctas = -(-((n + 63) // 64 * 64) // bn) * -(-m // bm) * s
    cluster = s > 1 and mode == "cluster"
    waves = -(-(ctas // s) // cap[(tile, s)]) if cluster else -(-ctas // (132 * occ))
    base = c[4] + waves * kts * c[NAMES.index(tile)]
    if s == 1:
        return base
    fixed, per_mb, per_rank = (c[7], c[8], c[9]) if cluster else (c[5], c[6], c[10])
    return base + fixed + per_mb * s * m * n * 4 / 1e6 + per_rank * (s - 2)


def print_table(d, cands, est, margin, force=frozenset()):
    """prefill_plan.cu's kMeasuredPrefillPlans: for every (shape, M) where the fastest measured candidate beats the
    cost model's pick by more than `margin` (or the pick was not timed), an entry for the tokens
    (previous measured M, M] whose m blocks are those of M (the same grid: every such M runs the same CTAs
    over the same k tiles, only the epilogue's valid rows differ)."""
    cfg = {"wgmma_bm256_bn128_s5_ov_tma": "kCfgBm256Tma", "wgmma_bm128_bn256_s6_ov_tma": "kCfgBm128Tma",
           "wgmma_bm64_bn128_s6_ov_occ2_tma": "kCfgBm64Tma", "wgmma_bm128_bn128_s8_ov_tma": "kCfgBm128n128Tma",
           "wgmma_bm128_bn128_s4_ov_occ2_tma": "kCfgBm128Occ2Tma", "wgmma_bm192_bn192_s6_ov_tma": "kCfgBm192Tma"}
    ms = sorted({m for _, m in d})
    rows = []  # [shape, lo, hi, best, notes]; a range that continues the previous one with the same plan extends it
    for (shape, m), v in sorted(d.items(), key=lambda kv: (SHAPES[kv[0][0]], kv[0][1])):
        pick = min(cands[(shape, m)], key=lambda kk: est(shape, m, kk))
        best = min(v, key=v.get)
        if pick in v and v[pick] <= v[best] * (1 + margin) and (shape, m) not in force:
            continue
        bm = ALL_TILES[best[0]][0]
        prev = max([x for x in ms if x < m], default=0)
        lo = max(prev + 1, (-(-m // bm) - 1) * bm + 1)
        was = f"{v[pick]:.1f}" if pick in v else "untimed"
        short = "bm%d%s" % (TILES[pick[0]][0], "n128" if pick[0] == "wgmma_bm128_bn128_s8_ov_tma" else "")
        note_tile = {"wgmma_bm128_bn128_s4_ov_occ2_tma": " bm128 occ2", "wgmma_bm192_bn192_s6_ov_tma": " bm192"}.get(best[0], "")
        note = f"M = {m}: {short} s{pick[1]} {pick[2]} {was} ->{note_tile} {v[best]:.1f}"
        if rows and rows[-1][0] == shape and rows[-1][3] == best and rows[-1][2] + 1 == lo:
            rows[-1][2] = m
            rows[-1][4].append(note)
        else:
            rows.append([shape, lo, m, best, [note]])
    for shape, lo, hi, best, notes in rows:
        reduce = {"none": "automatic", "kernel": "kernel", "cluster": "cluster"}[best[2]]
        n, k = SHAPES[shape]
        entry = f"    {{{n}, {k}, {lo}, {hi}, {cfg[best[0]]}, {best[1]}, PrefillSplitReduce::{reduce}}},"
        note = f"// {shape} " + "; ".join(notes) + " us"
        print(f"{entry}  {note}" if len(notes) == 1 else f"    {note}\n{entry}")


def fit_modes(a):
    kern, _ = load(a.csv, table_only=a.table is not None)
    clus, _ = load(a.cluster, table_only=a.table is not None)
    cap = resident_clusters(a.clusters)
    d = collections.defaultdict(dict)  # (shape, M) -> {(tile, split, mode): us}
    for key in set(kern) | set(clus):
        kv, cv = kern.get(key, {}), clus.get(key, {})
        # Every candidate either run measured: the cluster run also times splits the kernel run's
        # workspace bound leaves out (every split at M = 1024; until 2026-12-03 stop 22 this loop
        # walked the kernel run's candidates only and lost those).
        for tile, s in set(kv) | set(cv):
            if s == 1:  # no split: the mode plays no part; both runs measured it
                d[key][(tile, 1, "none")] = min(t for t in (kv.get((tile, 1)), cv.get((tile, 1))) if t is not None)
                continue
            if (tile, s) in kv and allowed(key[1], tile, s):
                d[key][(tile, s, "kernel")] = kv[(tile, s)]
            if (tile, s) in cv and cap.get((tile, s), 0) > 0:
                d[key][(tile, s, "cluster")] = cv[(tile, s)]

    # What prefill_plan chooses from: every tile x split 1..8, the reduce kernel within the workspace
    # bound, the cluster where it is resident. A pick the run did not time cannot be scored: it costs
    # UNMEASURED_PENALTY (a 10% loss) and is printed, so that a search steers clear of it.
    every = [(t, 1, "none") for t in TILES] + [(t, s, mode) for t in TILES for s in range(2, 9) for mode in ("kernel", "cluster")]
    cands = {(shape, m): [kk for kk in every if (kk[2] != "kernel" or allowed(m, kk[0], kk[1])) and
                          (kk[2] != "cluster" or cap.get((kk[0], kk[1]), 0) > 0)] for shape, m in d}
    UNMEASURED_PENALTY = math.log(1.10)

    def score_modes(c, verbose=False, keep=lambda shape: True):
        tot, worst = 0.0, 1.0
        for (shape, m), v in sorted(d.items()):
            if not keep(shape):
                continue
            best = min(v.values())
            pick = min(cands[(shape, m)], key=lambda kk: estimate_mode(shape, m, kk[0], kk[1], kk[2], c, cap))
            if pick not in v:
                tot += UNMEASURED_PENALTY
                if verbose:
                    print(f"  {shape:17s} M={m:5d} picks {pick}: not timed by the run (scored as a 10% loss)")
                continue
            r = v[pick] / best
            tot, worst = tot + math.log(r), max(worst, r)
            if verbose and r > 1.05:
                print(f"  {shape:17s} M={m:5d} picks {pick} {v[pick]:7.1f} us, best {min(v, key=v.get)} {best:7.1f}: x{r:.2f}")
        return tot, worst

    now = NOW
    if a.table is not None:
        points = lambda arg: {(x.split(":")[0], int(x.split(":")[1])) for x in arg.split(",") if x}
        drop = points(a.drop)
        print_table({key: v for key, v in d.items() if key not in drop}, cands,
                    lambda shape, m, kk: estimate_mode(shape, m, kk[0], kk[1], kk[2], now, cap), a.table, points(a.force))
        return
    print(f"both modes, cluster waves over resident clusters: {len(d)} points")
    print("  constants", [round(x, 3) for x in now], "->", score_modes(now, a.v))
    if a.search:
        lo, hi = list(NOW[:5]) + [0, 0, 0, 0, -1, -1], list(NOW[:5]) + [10, 0.6, 10, 0.6, 2, 2]
        best = fit_search.search(lambda c: score_modes(c)[0], now, lo, hi, 6000, 2000, 5, (0.8, 1.25), 0.02)
        print("  search (split terms):", [round(x, 3) for x in best[1]], "->", score_modes(best[1], a.v))
    if a.search and a.loso:
        # Each shape left out of the search in turn and scored with the constants fitted on the rest.
        held_fit = held_now = 0.0
        for shape in sorted({s for s, _ in d}):
            fit = fit_search.search(lambda c: score_modes(c, keep=lambda sh: sh != shape)[0], now, lo, hi, 3000, 1000, 5,
                                    (0.8, 1.25), 0.02)
            held = lambda c: score_modes(c, keep=lambda sh: sh == shape)[0]
            held_fit, held_now = held_fit + held(fit[1]), held_now + held(now)
            print(f"  held out {shape:17s}: refit {held(fit[1]):.3f}, constants now {held(now):.3f}")
        print(f"  leave one shape out: sum-log refit {held_fit:.3f}, constants now {held_now:.3f}")


def main():
    a = fit_search.parse_args(__doc__, extra=lambda ap: (
        ap.add_argument("--cluster", help="tune_tma CSV of the run with W4A16_PREFILL_SPLIT_REDUCE=cluster"),
        ap.add_argument("--clusters", help="prefill_gpu_test output with the resident clusters lines"),
        ap.add_argument("--loso", action="store_true", help="with --cluster --search: leave each shape out of the fit in turn"),
        ap.add_argument("--table", type=float, metavar="MARGIN",
                        help="with --cluster: print prefill_plan.cu's measured-plan entries where the best beats the model's pick by > MARGIN (0.03)"),
        ap.add_argument("--drop", default="", metavar="SHAPE:M,...",
                        help="with --table: points left out (an A/B through prefill_dq_ab did not reproduce their gain)"),
        ap.add_argument("--force", default="", metavar="SHAPE:M,...",
                        help="with --table: points that get an entry whatever the margin (an A/B measured the gap larger)")))
    if a.cluster:
        fit_modes(a)
        return
    rows = list(csv.DictReader(read(a.csv)))
    if not rows or any(r["kernel"].startswith("ab_") for r in rows):
        fit_split_term(rows)
        return
    d, default = load(a.csv)
    tot = sum(math.log(default[k] / min(t for kk, t in v.items() if allowed(k[1], *kk))) for k, v in d.items())
    worst = max(default[k] / min(t for kk, t in v.items() if allowed(k[1], *kk)) for k, v in d.items())
    print(f"default plan of the run: {len(d)} points, sum of log(plan / best allowed) {tot:.2f}, worst x{worst:.2f}")
    tot, worst = score(d, NOW, a.v)
    print(f"prefill_plan.cu cost model:   {len(d)} points, sum of log(pick / best allowed) {tot:.2f}, worst x{worst:.2f}")
    if a.search:
        lo, hi = [0.1] * 4 + [0, 0, 0], [2.5] * 4 + [10, 10, 0.5]
        best = fit_search.search(lambda c: score(d, c)[0], NOW[:7], lo, hi, 8000, 3000, 4, (0.8, 1.25), 0.02)
        print("search:", score(d, best[1]), [round(x, 3) for x in best[1]])


if __name__ == "__main__":
    main()
