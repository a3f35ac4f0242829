"""W4A16PreparedLinear against W4A16Linear on the GPU: device memory held per layer (cudaMemGetInfo after a call, torch's
cache emptied: the module's buffers, whatever the library allocated for it and the ops' shared workspace of the stream,
sized by the largest call) and the per-call time, eager and as a
CUDA graph replay (20 calls a graph), M = 1, fp16, uint4b8 g128, 4096x4096 and 14336x4096. Warm L2: this measures the
host side and the memory, not the kernel (the same kernel runs on the same bytes). Run on the device with the package
on PYTHONPATH."""
import gc
import time

import torch
import w4a16.torch as wt


def per_call(f, n=2000):
    for _ in range(50):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / n * 1e6)
    return sorted(ts)[2]


def graph_per_call(m, x, reps=20):
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
    return per_call(lambda: g.replay(), n=200) / reps


def free_mib():
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    return torch.cuda.mem_get_info()[0] / 2**20


torch.manual_seed(0)
# The first shape is a warm-up (its first calls load kernels and libraries, which the memory figures would count).
for n_, k_ in ((1024, 1024), (4096, 4096), (14336, 4096)):
    lin = torch.nn.Linear(k_, n_, bias=False).half().cuda()
    x = torch.randn(1, k_, dtype=torch.float16, device="cuda")
    # Memory first (before any graph's private pool): each module alone, after a call at M = 1 and one at M = 2048
    # (a prefill: W4A16Linear's binding holds its own workspace for 4096 rows from the start; the prepared module's
    # calls share one workspace per stream, here sized by the M = 2048 call and counted, then released).
    xl = torch.randn(2048, k_, dtype=torch.float16, device="cuda")
    base = free_mib()
    m = wt.W4A16Linear.from_linear(lin, group_size=128, scalar_type="uint4b8")
    y0, yl0 = m(x), m(xl).cpu()  # the M = 2048 output on the host: 2048 x N fp16 is not the layer's memory
    held_canonical = base - free_mib()
    shared_ws_c = wt.release_workspaces() / 2**20
    p = wt.W4A16PreparedLinear.from_linear(m)
    m_cpu = m.cpu()  # kept for the timing below, off the GPU (its op cache entry goes with the CUDA qweight)
    del m
    y1, yl1 = p(x), p(xl).cpu()
    assert torch.equal(y0, y1) and torch.equal(yl0, yl1)
    del yl0, yl1
    held_prepared = base - free_mib()
    shared_ws = wt.release_workspaces() / 2**20
    m = m_cpu.cuda()
    eager, eager_p = per_call(lambda: m(x)), per_call(lambda: p(x))
    graph, graph_p = graph_per_call(m, x), graph_per_call(p, x)
    weights_mib = n_ * k_ / 2 / 2**20
    print(f"{n_}x{k_} (int4 weights {weights_mib:.1f} MiB) M=1: device memory W4A16Linear {held_canonical:.1f} MiB "
          f"(of it the shared workspace {shared_ws_c:.1f}), "
          f"W4A16PreparedLinear {held_prepared:.1f} MiB (of it the shared workspace {shared_ws:.1f}); "
          f"eager {eager:.2f} / {eager_p:.2f} us/call, "
          f"graph replay {graph:.2f} / {graph_p:.2f} us/call")
    del p, m, m_cpu, y0, y1
    wt.release_workspaces()
