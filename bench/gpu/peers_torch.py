#!/usr/bin/env python3
"""PyTorch peers for the GPU sweep (shared/PERF.md), timed like bench/common/gpu_timer:
CUDA-graph capture of `calls` launches over rotating weight copies (>= 3x L2 in total),
CUDA events around each replay, median of >= 7 replays after warm-up.

Rows: tinygemm (torch._weight_int4pack_mm, bf16, g=128, weights packed with
torch._convert_weight_to_int4pack) and torch.matmul fp16 / bf16 (cuBLAS through PyTorch).
Each timed configuration is checked against an fp32 reference in the same run. Same CSV
columns as w4a16_bench_gpu; speedup_vs_cublas_f16 is against torch_matmul_f16 of this run.
tinygemm bytes: int4 weights + bf16 (scale, zero) pairs + x + y.

    python3 bench/gpu/peers_torch.py --csv peers_torch.csv [--quick]
"""
import argparse
import csv
import math
import statistics
import sys

import torch

SHAPES = [("qwen0.5b.qkv", 1152, 896), ("qwen0.5b.o", 896, 896), ("qwen0.5b.gate_up", 9728, 896),
          ("qwen0.5b.down", 896, 4864), ("llama8b.qkv", 6144, 4096), ("llama8b.o", 4096, 4096),
          ("llama8b.gate_up", 28672, 4096), ("llama8b.down", 4096, 14336), ("8192x8192", 8192, 8192),
          ("llama70b.gate_up", 57344, 8192)]
MS = [1, 2, 3, 4, 8, 12, 16, 32, 64]
PEAK_TBPS = 4.4
COLUMNS = ["kernel", "shape", "n", "k", "m", "dtype", "format", "group", "us", "tb_per_s", "pct_of_4.4TBps", "tflops",
           "speedup_vs_cublas_f16", "rel_err", "ok", "plan"]


def cold_copies(nbytes):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(1, math.ceil(3 * l2 / max(nbytes, 1)))


def time_graph(fn, copies, replays=9, warmup=3):
    calls = max(copies, 20)
    calls = (calls + copies - 1) // copies * copies
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(copies):
            fn(i)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for i in range(calls):
            fn(i % copies)
    for _ in range(warmup):
        g.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(max(replays, 7)):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        per_call.append(1000.0 * a.elapsed_time(b) / calls)
    del g
    return statistics.median(per_call)


def rel_err(out, ref):
    out = out.double()
    ref = ref.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def row(kernel, shape, n, k, m, dtype, fmt, group, us, nbytes, err, tol, plan=""):
    tbps = nbytes / (us * 1e-6) / 1e12
    return {"kernel": kernel, "shape": shape, "n": n, "k": k, "m": m, "dtype": dtype, "format": fmt, "group": group,
            "us": f"{us:.3f}", "tb_per_s": f"{tbps:.4f}", "pct_of_4.4TBps": f"{100 * tbps / PEAK_TBPS:.2f}",
            "tflops": f"{2.0 * m * n * k / (us * 1e-6) / 1e12:.3f}", "speedup_vs_cublas_f16": "0",
            "rel_err": f"{err:.3e}", "ok": int(err <= tol), "plan": plan}


def tinygemm_pack(q, inner_k_tiles=8):
    """q: int32 [N, K] in 0..15 -> torch's packed int4 layout for _weight_int4pack_mm."""
    q_u8 = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
    return torch._convert_weight_to_int4pack(q_u8, inner_k_tiles)


def run(shapes, ms, log, progress=None):
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    for name, n, k in shapes:
        xs = {dt: torch.randn(max(ms), k, device="cuda", dtype=torch.float32, generator=gen).to(dt)
              for dt in (torch.float16, torch.bfloat16)}
        # torch.matmul fp16 / bf16 (cuBLAS).
        for dt, label in ((torch.float16, "torch_matmul_f16"), (torch.bfloat16, "torch_matmul_bf16")):
            w = ((torch.rand(n, k, device="cuda", generator=gen) - 0.5) * 0.1).to(dt)
            copies = cold_copies(w.numel() * 2)
            ws = [w] + [w.clone() for _ in range(copies - 1)]
            x = xs[dt]
            for m in ms:
                xm = x[:m].contiguous()
                ys = [torch.empty(m, n, device="cuda", dtype=dt)]
                ref = xm.float() @ w.float().t()
                out = torch.matmul(xm, w.t())
                err = rel_err(out, ref)
                us = time_graph(lambda i: torch.matmul(xm, ws[i].t(), out=ys[0]), copies)
                nbytes = 2 * n * k + 2 * m * k + 2 * m * n
                rows.append(row(label, name, n, k, m, str(dt).replace("torch.", ""), "dense", 0, us, nbytes, err,
                                2e-3 if dt == torch.float16 else 1e-2))
                log(rows[-1])
            del ws, w
        # tinygemm: bf16, g = 128, zeros in torch's convention w = (q - 8) * scale + zero.
        g = 128
        if k % g == 0 and k % (8 * 16) == 0:
            q = torch.randint(0, 16, (n, k), device="cuda", dtype=torch.int32, generator=gen)
            scales = (torch.rand(k // g, n, device="cuda", generator=gen) * 0.02 + 0.01)
            zeros = (torch.rand(k // g, n, device="cuda", generator=gen) - 0.5) * 0.02
            sz = torch.stack([scales, zeros], dim=2).to(torch.bfloat16).contiguous()  # [G, N, 2]
            s_b = sz[..., 0].float().t().repeat_interleave(g, dim=1)  # [N, K]
            z_b = sz[..., 1].float().t().repeat_interleave(g, dim=1)
            w_deq = (q.float() - 8.0) * s_b + z_b
            try:
                wp = tinygemm_pack(q)
            except Exception as e:  # torch without the op or a different signature: say so, skip
                print(f"tinygemm: packing failed on {name}: {e}", file=sys.stderr)
                wp = None
            if wp is not None:
                nbytes_w = n * k // 2 + (k // g) * n * 4
                copies = cold_copies(nbytes_w)
                wps = [wp] + [wp.clone() for _ in range(copies - 1)]
                szs = [sz] + [sz.clone() for _ in range(copies - 1)]
                x = xs[torch.bfloat16]
                for m in ms:
                    xm = x[:m].contiguous()
                    ref = xm.float() @ w_deq.t()
                    out = torch._weight_int4pack_mm(xm, wp, g, sz)
                    err = rel_err(out, ref)
                    us = time_graph(lambda i: torch._weight_int4pack_mm(xm, wps[i], g, szs[i]), copies)
                    rows.append(row("tinygemm", name, n, k, m, "bfloat16", "uint4", g, us,
                                    nbytes_w + 2 * m * k + 2 * m * n, err, 1e-2, "torch._weight_int4pack_mm"))
                    log(rows[-1])
                del wps, szs, wp
            del q, w_deq, s_b, z_b
        torch.cuda.empty_cache()
    base = {(r["shape"], r["m"]): float(r["us"]) for r in rows if r["kernel"] == "torch_matmul_f16"}
    for r in rows:
        b = base.get((r["shape"], r["m"]))
        if b:
            r["speedup_vs_cublas_f16"] = f"{b / float(r['us']):.3f}"
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", default="peers_torch.csv")
    ap.add_argument("--quick", action="store_true", help="3 shapes, M = 1, 4, 16")
    ap.add_argument("--ms", default=None, help="comma-separated M values")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("peers_torch: no CUDA device, nothing timed", file=sys.stderr)
        return 0
    shapes = SHAPES
    ms = MS if a.ms is None else [int(v) for v in a.ms.split(",")]
    if a.quick:
        shapes = [s for s in SHAPES if s[0] in ("8192x8192", "llama8b.gate_up", "qwen0.5b.gate_up")]
        ms = [1, 4, 16]

    progress = open(a.csv, "w", newline="")  # rows as measured; rewritten with speedups at the end
    pw = csv.DictWriter(progress, fieldnames=COLUMNS)
    pw.writeheader()

    def log(r):
        pw.writerow(r)
        progress.flush()
        print(f"{r['kernel']:<18} {r['shape']:<17} M={r['m']:<3} {r['dtype']:<9} {r['us']:>9} us {r['tb_per_s']:>7} TB/s "
              f"err={r['rel_err']} {'ok' if r['ok'] else 'FAIL'}", file=sys.stderr, flush=True)


    rows = run(shapes, ms, log)
    progress.close()
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    bad = sum(1 for r in rows if not r["ok"])
    print(f"{len(rows)} rows, {bad} failed the check; CSV: {a.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
