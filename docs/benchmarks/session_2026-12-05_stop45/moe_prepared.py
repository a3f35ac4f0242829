"""W4A16PreparedMoE against W4A16MoE on the GPU, one Qwen3-30B-A3B MoE layer (E = 128, H = 2048, I = 768, uint4b8,
g = 128, fp16, top 8 of a router): device memory the module holds after calls at T = 16 and T = 1024 (cudaMemGetInfo,
torch's cache emptied; the ops' shared workspace of the stream counted once, then released) and the time of a T = 1 /
16 call as a CUDA graph replay (20 calls a graph, warm L2: host side and memory, not the kernels' bandwidth). Run on the
device with the package on PYTHONPATH."""
import gc
import time

import numpy as np
import torch
import w4a16
import w4a16.torch as wt


def free_mib():
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    return torch.cuda.mem_get_info()[0] / 2**20


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
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(50):
            g.replay()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / 50 / reps * 1e6)
    return sorted(ts)[2]


E, H, I, G = 128, 2048, 768, 128
rng = np.random.default_rng(0)


def expert(n, k):
    q = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    s = rng.uniform(0.002, 0.02, size=(n, k // G)).astype(np.float16)
    return w4a16.pack(q, s, group_size=G, scalar_type="uint4b8")


moe = w4a16.MoE.from_experts([expert(I, H) for _ in range(E)], [expert(I, H) for _ in range(E)],
                             [expert(H, I) for _ in range(E)], (0.05 * rng.standard_normal((E, H))).astype(np.float16))
x16 = torch.randn(16, H, dtype=torch.float16, device="cuda")
x1k = torch.randn(1024, H, dtype=torch.float16, device="cuda")
# Warm-up: torch's kernels and cuBLAS (the routing's matmul), loaded lazily into device memory, before counting.
torch.equal(x16, x16)
torch.topk(torch.softmax(x1k.float() @ torch.randn(E, H, device="cuda").t(), dim=-1), 8, dim=-1)


def step(tag):
    f = free_mib()
    print(f"  {tag:34s} held {base - f:7.1f} MiB, torch allocated {torch.cuda.memory_allocated() / 2**20:7.1f}, "
          f"cache entries {len(wt._cache)}, shared workspace {sum(t.numel() for h in wt._workspaces.values() for t in h) / 2**20:6.1f}")
    return base - f


base = free_mib()
m = wt.W4A16MoE.from_moe(moe, device="cuda", top_k=8)
step("W4A16MoE made")
y16 = m(x16)
step("after T = 16")
y1k = m(x1k).cpu()
held = step("after T = 1024")
ws = wt.release_workspaces() / 2**20
p = wt.W4A16PreparedMoE.from_module(m)
m_cpu = m.cpu()  # off the GPU for the memory figure (its op cache entry goes with the CUDA tensors)
del m
step("prepared made, W4A16MoE moved off")
assert torch.equal(p(x16), y16)
step("after T = 16")
assert torch.equal(p(x1k).cpu(), y1k)
held_p = step("after T = 1024")
ws_p = wt.release_workspaces() / 2**20
m = m_cpu.cuda()
print(f"Qwen3-30B-A3B MoE layer ({moe.bytes / 2**20:.0f} MiB of int4 experts): device memory W4A16MoE {held:.0f} MiB "
      f"(of it the shared workspace {ws:.0f}), W4A16PreparedMoE {held_p:.0f} MiB (of it the shared workspace {ws_p:.0f})")
for t in (1, 16):
    x = torch.randn(t, H, dtype=torch.float16, device="cuda")
    print(f"T={t}: graph replay W4A16MoE {graph_us(m, x):.2f} us/call, W4A16PreparedMoE {graph_us(p, x):.2f} us/call")
