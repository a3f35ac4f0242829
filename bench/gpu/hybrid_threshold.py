#!/usr/bin/env python3
"""Where should cuda_hybrid switch from its decode path to its prefill path? (issue 6)

Reads w4a16_bench_gpu CSVs with both paths measured at every M of a range, e.g. on the H200:

  w4a16_bench_gpu --registry cuda_hybrid,cuda_prefill --no-extra-groups --decode-max-m 16 \
      --shapes qwen0.5b.qkv,llama8b.down --ms 4,5,6,7,8,9,10,11,12,13,14,15,16 \
      --dtypes f16,bf16 --scalars uint4b8,uint4 --csv both_paths.csv

and prints, per layer shape and scalar type (every dtype together, as the table in
src/registry/hybrid_thresholds.hpp has one entry per shape and scalar type), the decode / prefill
time ratio at each M and the threshold t (decode for M <= t, prefill above) of least summed log
ratio to the faster path over the measured points, with its worst ratio; also the default's (16).

  python3 bench/gpu/hybrid_threshold.py both_paths.csv [more.csv ...]
"""
import argparse
import math

from hybrid_report import PATHS, load


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--default", type=int, default=16, help="the table's default threshold (16)")
    args = ap.parse_args()
    times, _, failed = load(args.csv)
    if failed:
        print(f"hybrid_threshold: {failed} rows failed their correctness check (hybrid_report.py names them)")
    # (shape, format, dtype, m) -> {path: us}, where both paths were timed
    points = {(s, f, d, m): {p: v[p] for p in PATHS} for (s, d, f, m), v in times.items() if all(p in v for p in PATHS)}
    for shape, fmt in sorted({(k[0], k[1]) for k in points}):
        mine = {k: v for k, v in points.items() if (k[0], k[1]) == (shape, fmt)}
        ms = sorted({k[3] for k in mine})

        def score(th):
            logs = [math.log((v["cuda_decode"] if k[3] <= th else v["cuda_prefill"]) / min(v.values())) for k, v in mine.items()]
            return sum(logs), math.exp(max(logs))

        best = min(range(ms[0] - 1, ms[-1] + 1), key=lambda th: (round(score(th)[0], 6), -th))
        s_best, s_def = score(best), score(args.default)
        print(f"{shape} {fmt}: threshold {best} (sum log {s_best[0]:.3f}, worst {s_best[1]:.3f}x); "
              f"default {args.default}: sum log {s_def[0]:.3f}, worst {s_def[1]:.3f}x")
        for dtype in sorted({k[2] for k in mine}):
            ratios = " ".join(f"{m}:{mine[(shape, fmt, dtype, m)]['cuda_decode'] / mine[(shape, fmt, dtype, m)]['cuda_prefill']:.2f}"
                              for m in ms if (shape, fmt, dtype, m) in mine)
            print(f"    {dtype} decode / prefill: {ratios}")


if __name__ == "__main__":
    main()
