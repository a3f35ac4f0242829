#!/usr/bin/env python3
"""Is cuda_hybrid within 5% of the faster of its two paths? (issue 6, shared/PERF.md)

Reads w4a16_bench_gpu CSVs that hold, per (shape, dtype, format, M), the rows
`cuda_decode` (the decode kernel called directly), `cuda_prefill (registry)` and
`cuda_hybrid (registry)` (sweep flags: --registry cuda_hybrid,cuda_prefill), and prints
how many points are within the tolerance, every miss, and one markdown table per
(dtype, format): hybrid µs, its ratio to the faster path and which path that was. Where a
point has no decode row (the sweep's --decode-max-m), the prefill path alone is the reference.
Exit status 1 when a point misses or a row failed its correctness check.

  python3 bench/gpu/hybrid_report.py run_f16.csv run_bf16.csv [--tolerance 1.05] [--markdown]
"""
import argparse
import collections
import csv
import sys

PATHS = ("cuda_decode", "cuda_prefill")


def load(paths):
    """The sweep CSVs as (shape, dtype, format, m) -> kernel -> us, the shapes in file order and the
    count of rows that failed their correctness check; OSError when a file cannot be read."""
    times = collections.defaultdict(dict)
    shapes, failed = [], 0
    for f in paths:
        with open(f, newline="") as fh:
            for r in csv.DictReader(fh):
                kernel = r["kernel"].split(" ")[0]
                times[(r["shape"], r["dtype"], r["format"], int(r["m"]))][kernel] = float(r["us"])
                if r["shape"] not in shapes:
                    shapes.append(r["shape"])
                failed += r["ok"] != "1"
    return times, shapes, failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--tolerance", type=float, default=1.05)
    ap.add_argument("--markdown", action="store_true", help="print the per-(dtype, format) tables")
    a = ap.parse_args()

    try:
        times, shapes, failed = load(a.csv)
    except OSError as e:
        print(f"hybrid_report: cannot read {e.filename}: {e.strerror}")
        return 1

    total, misses = 0, []
    for key, t in sorted(times.items()):
        paths = {k: t[k] for k in PATHS if k in t}
        if "cuda_hybrid" not in t or not paths:
            continue
        total += 1
        best = min(paths.values())
        if t["cuda_hybrid"] > a.tolerance * best:
            misses.append((key, paths, t["cuda_hybrid"] / best))
    print(f"hybrid within {100 * (a.tolerance - 1):.0f}% of the faster path: {total - len(misses)} of {total} points; "
          f"{failed} rows failed their check")
    for key, paths, ratio in misses:
        print(f"  miss {key}: hybrid {ratio:.2f}x the faster path {paths}")

    if a.markdown:
        ms = sorted({k[3] for k in times})
        hybrid_keys = [k for k, t in times.items() if "cuda_hybrid" in t]  # not the peers' rows (cuBLAS: format "dense")
        for dt in sorted({k[1] for k in hybrid_keys}, reverse=True):
            for fmt in sorted({k[2] for k in hybrid_keys if k[1] == dt}, reverse=True):
                print(f"\n{dt}, {fmt}: hybrid µs (ratio to the faster path; D = decode was faster, P = prefill)\n")
                print("| shape | " + " | ".join(f"M={m}" for m in ms) + " |")
                print("|---|" + "---|" * len(ms))
                for s in shapes:
                    cells = []
                    for m in ms:
                        t = times.get((s, dt, fmt, m), {})
                        paths = {k: t[k] for k in PATHS if k in t}
                        if "cuda_hybrid" not in t or not paths:
                            cells.append("–")
                            continue
                        win = min(paths, key=paths.get)
                        cells.append(f"{t['cuda_hybrid']:.1f} ({t['cuda_hybrid'] / paths[win]:.2f} {'D' if win == 'cuda_decode' else 'P'})")
                    print(f"| {s} | " + " | ".join(cells) + " |")
    return 1 if misses or failed else 0


if __name__ == "__main__":
    sys.exit(main())
