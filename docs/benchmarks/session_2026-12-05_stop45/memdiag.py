import gc, sys, numpy as np, torch
sys.path.insert(0, "python/tests")
import w4a16.torch as wt
from conftest import awq_pack, random_layer
def st(tag):
    torch.cuda.synchronize(); gc.collect(); torch.cuda.empty_cache()
    f = torch.cuda.mem_get_info()[0] / 2**20
    print(f"{tag:40s} free {f:10.1f} MiB  torch alloc {torch.cuda.memory_allocated()/2**20:8.1f} reserved {torch.cuda.memory_reserved()/2**20:8.1f}  cache {len(wt._cache)} ws {sum(t.numel() for h in wt._workspaces.values() for t in h)/2**20:.1f}")
rng = np.random.default_rng(0)
st("start")
for rep in range(2):
    q, z, s = random_layer(rng, 8192, 4096, 128)
    t = [torch.from_numpy(awq_pack(q)), torch.from_numpy(awq_pack(z)), torch.from_numpy(s)]
    m = wt.W4A16Linear.from_awq(*t, 128).cuda()
    model = torch.nn.Sequential(m); del m
    x = torch.randn(4, 4096, dtype=torch.float16, device="cuda")
    st(f"{rep} canonical module on cuda")
    y0 = model(x); st(f"{rep} after canonical call")
    n = wt.prepare_modules(model); st(f"{rep} after swap")
    y1 = model(x); st(f"{rep} after prepared call"); print(torch.equal(y0, y1))
    del model, y0, y1; st(f"{rep} all deleted")
