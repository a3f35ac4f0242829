"""Per-call time of the PyTorch path on the CPU, old build against new, interleaved.

What it times (M = 1, uint4b8, group 128, 896x896 and 4096x4096, float16 and bfloat16 x):
  module   W4A16Linear(x): nn.Module call, the w4a16::gemm op through the dispatcher, the op's cache lookup,
           QuantizedLinear's plumbing (checks, export/import of x and y, output allocation), the kernel
  direct   QuantizedLinear(x): the same without the module and the op
  floor    _core.Linear.run(x, y) on ready numpy arrays: the kernel plus the least binding work, so that
           module - floor and direct - floor are the host overhead of each path
Each number is the median of 5 repeats of N calls (N = 2000; 500 at 4096x4096) after 200 warm-up calls, and the
table gives the median over the rounds of each build.

  python torch_overhead_cpu.py --compare OLD_SITE NEW_SITE --rounds 3   # OLD_SITE / NEW_SITE: folders holding a
                                                                        # built w4a16 package (pip install --target)
  PYTHONPATH=SITE python torch_overhead_cpu.py                          # one build, one round (prints JSON lines)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = ((896, 896), (4096, 4096))
DTYPES = ("float16", "bfloat16")


def per_call(f, n):
    for _ in range(200):
        f()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        ts.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(ts)


def one_round():
    import numpy as np
    import torch

    import w4a16.torch as wt

    torch.manual_seed(0)
    for n_, k_ in SHAPES:
        calls = 2000 if n_ * k_ < 4096 * 4096 else 500
        for dt in DTYPES:
            tdt = getattr(torch, dt)
            lin = torch.nn.Linear(k_, n_, bias=False).to(tdt)
            m = wt.W4A16Linear.from_linear(lin, group_size=128, scalar_type="uint4b8")
            x = torch.randn(1, k_).to(tdt)
            layer = wt._layer_for(m.qweight, m.scales, m.zeros, m.bias, m.perm, 128, "uint4b8", "")
            layer(x)
            run = layer.linear(dt, "cpu", 0, None).run  # the Linear the calls above prepared
            y = torch.empty(1, n_, dtype=tdt)
            as_np = (lambda t: t.view(torch.int16).numpy().view(np.uint16)) if dt == "bfloat16" else (lambda t: t.numpy())
            xn, yn, bits = as_np(x), as_np(y), dt if dt == "bfloat16" else ""
            r = {"shape": f"{n_}x{k_}", "dtype": dt, "kernel": layer.kernel,
                 "module": per_call(lambda: m(x), calls),
                 "direct": per_call(lambda: layer(x), calls),
                 "floor": per_call(lambda: run(xn, yn, 0, bits), calls)}
            assert torch.equal(m(x), layer(x))
            print(json.dumps(r), flush=True)


def compare(old, new, rounds):
    rows = {}
    for i in range(rounds):
        for label, site in (("old", old), ("new", new)) if i % 2 == 0 else (("new", new), ("old", old)):
            env = dict(os.environ, PYTHONPATH=site)
            out = subprocess.run([sys.executable, __file__], env=env, check=True, capture_output=True, text=True,
                                 cwd="/").stdout
            for line in out.splitlines():
                r = json.loads(line)
                rows.setdefault((r["shape"], r["dtype"]), {}).setdefault(label, []).append(r)
                print(label, i, line, flush=True)
    print(f"\nmedian over {rounds} rounds of each build (us per call; overhead = call - floor)")
    print(f"{'shape':10s} {'dtype':9s} {'path':7s} {'old':>8s} {'new':>8s} {'old ovh':>8s} {'new ovh':>8s} {'saved':>7s}")
    for (shape, dt), by in rows.items():
        for path in ("module", "direct"):
            v = {b: statistics.median(r[path] for r in by[b]) for b in ("old", "new")}
            o = {b: statistics.median(r[path] - r["floor"] for r in by[b]) for b in ("old", "new")}
            print(f"{shape:10s} {dt:9s} {path:7s} {v['old']:8.2f} {v['new']:8.2f} {o['old']:8.2f} {o['new']:8.2f} "
                  f"{o['old'] - o['new']:7.2f}")
        f = {b: statistics.median(r["floor"] for r in by[b]) for b in ("old", "new")}
        print(f"{shape:10s} {dt:9s} {'floor':7s} {f['old']:8.2f} {f['new']:8.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("OLD_SITE", "NEW_SITE"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.compare:
        compare(*a.compare, a.rounds)
    else:
        one_round()
