"""Stop 46: W4A16PreparedMoE ran 1.3 us slower than W4A16MoE at T = 1 per graph replay in stop 45 (moe_prepared.py,
measured W4A16MoE first, then the prepared module). Here three modules of the same Qwen3-30B-A3B layer (E = 128, H =
2048, I = 768, uint4b8, g = 128, fp16, top 8 of a router) are timed in alternation, 3 rounds, so that order is not a
factor: W4A16MoE (the op's CudaMoe::create: one allocation for the six layout arrays), W4A16PreparedMoE as from_moe
makes it (one torch tensor per array), and W4A16PreparedMoE over views of one torch buffer (the arrays at 256-byte
aligned offsets, as create places them). Outputs checked equal. Graph replay of 20 calls, warm L2 (host side and the
kernels' fixed costs, not bandwidth)."""
import time

import numpy as np
import torch
import w4a16
import w4a16.torch as wt


def graph_us(m, x, reps=20):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(reps):
            m(x)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(50):
            g.replay()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / 50 / reps * 1e6)
    return sorted(ts)[3]


E, H, I, G = 128, 2048, 768, 128
rng = np.random.default_rng(0)


def expert(n, k):
    q = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    s = rng.uniform(0.002, 0.02, size=(n, k // G)).astype(np.float16)
    return w4a16.pack(q, s, group_size=G, scalar_type="uint4b8")


moe = w4a16.MoE.from_experts([expert(I, H) for _ in range(E)], [expert(I, H) for _ in range(E)],
                             [expert(H, I) for _ in range(E)], (0.05 * rng.standard_normal((E, H))).astype(np.float16))
a = wt.W4A16MoE.from_moe(moe, device="cuda", top_k=8)
b = wt.W4A16PreparedMoE.from_moe(moe, device="cuda", top_k=8)
arrays = moe.layout_arrays("float16")
offs, total = {}, 0
for n, v in arrays.items():
    offs[n] = total
    total += (v.nbytes + 255) // 256 * 256
buf = torch.empty(total, dtype=torch.uint8, device="cuda")
views = {}
for n, v in arrays.items():
    t = torch.from_numpy(np.ascontiguousarray(v))
    if n.endswith("_scales"):
        t = t.view(torch.float16)
    dst = buf[offs[n]:offs[n] + v.nbytes].view(t.dtype).view(t.shape)
    dst.copy_(t)
    views[n] = dst
c = wt.W4A16PreparedMoE(views["w13_qweight"], views["w13_scales"], views["w2_qweight"], views["w2_scales"],
                        views.get("w13_zeros"), views.get("w2_zeros"), b.router, group_size=G, scalar_type="uint4b8",
                        top_k=8)
print("base addresses:", {n: hex(t.data_ptr() % 4096) for n, t in (("moe_create?", a.w13_qweight),
      ("prepared", b.w13_qweight), ("one_buffer", c.w13_qweight))})
for t in (1, 16):
    x = torch.randn(t, H, dtype=torch.float16, device="cuda")
    ya, yb, yc = a(x), b(x), c(x)
    assert torch.equal(ya, yb) and torch.equal(ya, yc), "outputs differ"
    res = {"W4A16MoE": [], "Prepared": [], "Prepared_one_buffer": []}
    for r in range(3):
        order = [("W4A16MoE", a), ("Prepared", b), ("Prepared_one_buffer", c)]
        if r % 2:
            order.reverse()
        for name, m in order:
            res[name].append(graph_us(m, x))
    print(f"T={t}: " + ", ".join(f"{k} {' / '.join(f'{v:.2f}' for v in vs)} us" for k, vs in res.items()))
