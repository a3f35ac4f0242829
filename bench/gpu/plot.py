#!/usr/bin/env python3
"""One PNG per shape from the GPU sweep CSVs (w4a16_bench_gpu, peers_torch.py): time per call
against M (log-log), one line per kernel / dtype / format at g = 128 (dense peers as they are).

    python3 bench/gpu/plot.py bench_gpu.csv peers_torch.csv --out plots/
"""
import argparse
import csv
import os
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--out", default="plots")
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = defaultdict(lambda: defaultdict(list))  # shape -> label -> [(m, us)]
    for path in a.csv:
        if not os.path.exists(path):
            print(f"plot: {path} missing, skipped", file=sys.stderr)
            continue
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["format"] != "dense" and int(r["group"]) != 128:
                    continue
                label = f"{r['kernel']} {r['dtype']}" + ("" if r["format"] == "dense" else f" {r['format']}")
                m = r["m"] if "m" in r else r["M"]  # the GPU sweeps write "m", the CPU sweep "M"
                series[r["shape"]][label].append((int(m), float(r["us"])))
    os.makedirs(a.out, exist_ok=True)
    for shape, lines in sorted(series.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("M (tokens)")
        ax.set_ylabel("us per call (median, cold cache)")
        ax.set_title(shape)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, f"{shape}.png"), dpi=110)
        plt.close(fig)
    print(f"plot: {len(series)} PNGs in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
