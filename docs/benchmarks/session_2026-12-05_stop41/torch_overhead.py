"""Per-call time of the PyTorch path on the GPU: W4A16Linear eager (the op through the dispatcher, the Python cache, the
QuantizedLinear plumbing), the same calls captured in a CUDA graph and replayed, and QuantizedLinear called directly;
M = 1, fp16, uint4b8 g128, 896x896 and 4096x4096. Warm L2 (the same weights every call): this measures the host side,
not the kernel's bandwidth. Run on the device with the package on PYTHONPATH."""
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


torch.manual_seed(0)
for n_, k_ in ((896, 896), (4096, 4096)):
    lin = torch.nn.Linear(k_, n_, bias=False).half().cuda()
    m = wt.W4A16Linear.from_linear(lin, group_size=128, scalar_type="uint4b8")
    x = torch.randn(1, k_, dtype=torch.float16, device="cuda")
    layer = wt._layer_for(m.qweight, m.scales, m.zeros, m.bias, m.perm, 128, "uint4b8", "")
    eager = per_call(lambda: m(x))
    direct = per_call(lambda: layer(x))
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    reps = 20
    with torch.cuda.graph(g):
        for _ in range(reps):
            y = m(x)
    graph = per_call(lambda: g.replay(), n=200) / reps
    print(f"{n_}x{k_} M=1: W4A16Linear eager {eager:7.2f} us/call, QuantizedLinear direct {direct:7.2f}, "
          f"CUDA graph replay {graph:6.2f} (20 calls a graph)")
