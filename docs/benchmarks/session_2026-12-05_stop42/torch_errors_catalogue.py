"""What the PyTorch path does with ~40 good and bad inputs (exception class and text, or the output's shape, dtype,
requires_grad and sum), for W4A16Linear and QuantizedLinear: run with each build on PYTHONPATH and diff the outputs
(torch_errors_old.txt / torch_errors_new.txt)."""
import torch, numpy as np
import w4a16, w4a16.torch as wt
torch.manual_seed(0)
lin = torch.nn.Linear(128, 64, bias=True).half()
m = wt.W4A16Linear.from_linear(lin, group_size=64)
layer = wt._layer_for(m.qweight, m.scales, m.zeros, m.bias, m.perm, 64, "uint4", "")
good = torch.randn(3, 128).half()
cases = {}
for dt in (torch.float8_e4m3fn, torch.float32, torch.float64, torch.int8, torch.int32, torch.complex64, torch.uint16, torch.bool, torch.uint8):
    cases[f"dtype {dt}"] = torch.zeros(2, 128).to(dt)
cases["K wrong"] = torch.zeros(2, 64).half()
cases["K wrong 3d"] = torch.zeros(2, 3, 64).half()
cases["0-d"] = torch.tensor(1.0).half()
cases["1-d K"] = torch.zeros(128).half()
cases["1-d wrong"] = torch.zeros(100).half()
cases["5-d"] = torch.zeros(1, 1, 1, 2, 128).half()
cases["noncontig inner"] = torch.zeros(128, 4).half().t()
cases["expanded rows"] = torch.zeros(1, 128).half().expand(4, 128)
cases["row padded"] = torch.zeros(4, 256).half()[:, :128]
cases["bf16 odd view"] = torch.zeros(4, 129).bfloat16()[:, 1:]
cases["misaligned fp16"] = torch.zeros(4 * 128 + 1).half()[1:].view(4, 128)
cases["M=0"] = torch.zeros(0, 128).half()
cases["M=0 3d"] = torch.zeros(2, 0, 128).half()
cases["requires_grad"] = torch.randn(2, 128, requires_grad=True).half()
cases["numpy"] = np.zeros((2, 128), np.float16)
cases["list"] = [[0.0] * 128]
cases["meta"] = torch.zeros(2, 128, device="meta").half()
cases["big M"] = torch.zeros(5000, 128).half()
def show(f, x):
    try:
        y = f(x)
        s = ""
        if isinstance(y, torch.Tensor) and y.device.type == "cpu":
            s = f" sum={y.detach().float().sum().item()}"
        return f"ok {type(y).__name__} {tuple(y.shape)} {getattr(y, 'dtype', None)} rg={getattr(y, 'requires_grad', None)}{s}"
    except Exception as e:
        return f"{type(e).__module__}.{type(e).__name__}: {str(e)[:300]}"
for name, x in cases.items():
    print(f"[{name}] module: {show(m, x)}")
    print(f"[{name}] layer : {show(layer, x)}")
print("[out wrong shape]", show(lambda x: layer(x, out=torch.empty(3, 63).half()), good))
print("[out wrong dtype]", show(lambda x: layer(x, out=torch.empty(3, 64)), good))
print("[out numpy uint16 with torch bf16 x]", show(lambda x: layer(x.bfloat16(), out=np.empty((3, 64), np.uint16)), good))
print("[out 3d]", show(lambda x: layer(x.view(1, 3, 128), out=torch.empty(1, 3, 64).half()), good))
print("[out ok]", show(lambda x: layer(x, out=torch.empty(3, 64).half()), good))
print("[out requires_grad]", show(lambda x: layer(x, out=torch.empty(3, 64, requires_grad=True).half()), good))
print("[dtype garbage torch]", show(lambda x: layer(x, dtype="garbage"), good))
print("[numpy bf16 bits]", show(lambda x: layer(np.zeros((2, 128), np.uint16), dtype="bfloat16"), good))
print("[numpy bits no dtype]", show(lambda x: layer(np.zeros((2, 128), np.uint16)), good))
print("[op zeros float]", show(lambda x: torch.ops.w4a16.gemm(x, m.qweight, m.scales, m.zeros.half(), None, None, 64, "uint4", ""), good))
print("[op group bad]", show(lambda x: torch.ops.w4a16.gemm(x, m.qweight, m.scales, m.zeros, None, None, 48, "uint4", ""), good))
print("[op scalar bad]", show(lambda x: torch.ops.w4a16.gemm(x, m.qweight, m.scales, m.zeros, None, None, 64, "int4", ""), good))
print("[op backend bad]", show(lambda x: torch.ops.w4a16.gemm(x, m.qweight, m.scales, m.zeros, None, None, 64, "uint4", "nope"), good))
print("[op meta weight]", show(lambda x: torch.ops.w4a16.gemm(x, m.qweight.to("meta"), m.scales, m.zeros, None, None, 64, "uint4", ""), good))
g = torch.Generator().manual_seed(1)
for dt in (torch.float16, torch.bfloat16):
    xs = torch.randn(5, 128, generator=g).to(dt)
    y = m(xs)
    print(f"[values {dt}]", y.float().sum().item(), y.float().abs().sum().item(), y.dtype, y.shape, y.is_contiguous())
    y = m(xs.view(1, 5, 128)); print(f"[values 3d {dt}]", y.float().sum().item(), y.shape)
    y = m(torch.randn(300, 128, generator=g).to(dt)); print(f"[values M=300 {dt}]", y.float().sum().item())
