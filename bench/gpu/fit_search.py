"""Random search with coordinate refinement, shared by the plan fits (fit_decode_plan.py,
fit_prefill_plan.py): `start` scored first, `broad` uniform draws in [lo, hi], then one coordinate
at a time scaled and nudged around the best; returns (score, constants) of the lowest score."""
import argparse
import random


def search(score, start, lo, hi, iters, broad, seed, scale=(0.7, 1.3), nudge=0.05):
    random.seed(seed)
    best = (score(start), tuple(start))
    for it in range(iters):
        if it < broad:
            c = tuple(random.uniform(x, y) for x, y in zip(lo, hi))
        else:
            c = list(best[1])
            i = random.randrange(len(c))
            c[i] = min(hi[i], max(lo[i], c[i] * random.uniform(*scale) + random.uniform(-nudge, nudge) * (hi[i] - lo[i])))
            c = tuple(c)
        s = score(c)
        if s < best[0]:
            best = (s, c)
    return best


def parse_args(doc, extra=None):
    """The fits' command line: the sweep CSV, --search (refit), -v (print the misses); `extra(ap)` adds a fit's own."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if extra:
        extra(ap)
    ap.add_argument("csv")
    ap.add_argument("--search", action="store_true", help="refit the constants by random search")
    ap.add_argument("-v", action="store_true", help="print every point the model misses by more than a few %%")
    return ap.parse_args()
