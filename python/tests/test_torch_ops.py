"""w4a16.torch: the custom ops w4a16::prepare / w4a16::gemm (checked with torch.library.opcheck)
and W4A16Linear. Skipped where torch is absent (CI); the lead runs them on the GPU machine,
where the CUDA cases run too when the extension was built with W4A16_ENABLE_CUDA=ON."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed; w4a16.torch needs it")

import w4a16  # noqa: E402
import w4a16.torch as wt  # noqa: E402
from conftest import (TOL, awq_pack, dequant_kn, gptq_qweight, gptq_qzeros, group_of, np_moe, random_layer,  # noqa: E402
                      rel_err)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and w4a16.has_cuda else [])
if torch.cuda.is_available() and not w4a16.has_cuda:
    print("note: a GPU is present but this w4a16 build has no CUDA kernels; CUDA cases skipped")


def opcheck(op, args):
    torch.library.opcheck(op, args, test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                                "test_aot_dispatch_dynamic"))


def awq_tensors(rng, n, k, g, device):
    q, z, s = random_layer(rng, n, k, g)
    t = [torch.from_numpy(awq_pack(q)), torch.from_numpy(awq_pack(z)), torch.from_numpy(s)]
    return [x.to(device) for x in t], dequant_kn(q, z, s, group_of(k, g))


@pytest.mark.parametrize("device", DEVICES)
def test_prepare_awq_opcheck_and_values(rng, device):
    (qw, qz, s), w = awq_tensors(rng, 64, 256, 128, device)
    args = (qw, qz, s, None, "awq", 128, False, False, "gptq")
    opcheck(torch.ops.w4a16.prepare.default, args)
    cq, cs, cz, perm = torch.ops.w4a16.prepare(*args)
    assert cq.shape == (64, 32) and cs.shape == (64, 2) and cz.shape == (8, 2) and perm.numel() == 0
    assert cq.device.type == device and cq.dtype == torch.int32 and cs.dtype == torch.float16
    layer = w4a16.from_canonical(cq.cpu().numpy(), cs.cpu().numpy(), cz.cpu().numpy(), group_size=128)
    np.testing.assert_array_equal(layer.dequantize(), w.astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("sym,desc_act", [(True, False), (False, False), (True, True)])
def test_prepare_gptq_opcheck(rng, device, sym, desc_act):
    n, k, g = 32, 256, 64
    q, z, s = random_layer(rng, n, k, g, asym=not sym)
    g_idx = (rng.permutation(np.arange(k) // g) if desc_act else np.arange(k) // g).astype(np.int32)
    t = [torch.from_numpy(x).to(device) for x in (gptq_qweight(q), gptq_qzeros(z, "gptq_v2"), s, g_idx)]
    args = (t[0], t[1], t[2], t[3], "gptq", g, sym, desc_act, "gptq_v2")
    opcheck(torch.ops.w4a16.prepare.default, args)
    cq, cs, cz, perm = torch.ops.w4a16.prepare(*args)
    assert perm.shape == (k,) and (cz.numel() == 0) == sym
    if not desc_act:
        assert torch.equal(perm.cpu(), torch.arange(k, dtype=torch.int32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1,), (5,), (2, 3)])
def test_gemm_opcheck_and_matches_reference(rng, device, dtype, shape):
    n, k, g = 64, 256, 128
    (qw, qz, s), w = awq_tensors(rng, n, k, g, device)
    cq, cs, cz, perm = torch.ops.w4a16.prepare(qw, qz, s, None, "awq", g, False, False, "gptq")
    bias = torch.from_numpy(rng.standard_normal(n).astype(np.float16)).to(device)
    x = torch.from_numpy(rng.standard_normal((*shape, k)).astype(np.float32)).to(dtype).to(device)
    args = (x, cq, cs, cz, bias, None, g, "uint4", "")
    opcheck(torch.ops.w4a16.gemm.default, args)
    y = torch.ops.w4a16.gemm(*args)
    assert y.shape == (*shape, n) and y.dtype == dtype and y.device == x.device
    ref = x.double().cpu().numpy().reshape(-1, k) @ w.T + bias.double().cpu().numpy()
    assert rel_err(y.float().cpu().numpy().reshape(-1, n), ref) <= TOL["float16" if dtype == torch.float16 else "bfloat16"]


def test_gemm_rejects_wrong_inputs(rng):
    (qw, qz, s), _ = awq_tensors(rng, 16, 128, 64, "cpu")
    cq, cs, cz, _ = torch.ops.w4a16.prepare(qw, qz, s, None, "awq", 64, False, False, "gptq")
    with pytest.raises(w4a16.DTypeError) as e:
        torch.ops.w4a16.gemm(torch.ones(2, 128), cq, cs, cz, None, None, 64, "uint4", "")
    assert str(e.value).startswith("x: expected")
    with pytest.raises(w4a16.ShapeError):
        torch.ops.w4a16.gemm(torch.ones(2, 64, dtype=torch.float16), cq, cs, cz, None, None, 64, "uint4", "")
    with pytest.raises(w4a16.Error) as e:  # float zero points where packed int32 are expected
        torch.ops.w4a16.gemm(torch.ones(2, 128, dtype=torch.float16), cq, cs, cz.to(torch.float16), None, None, 64,
                             "uint4", "")
    assert "zeros" in str(e.value)


@pytest.mark.parametrize("device", DEVICES)
def test_w4a16linear_from_awq_gptq_and_checkpoint(rng, device, tmp_path):
    n, k, g = 48, 256, 64
    (qw, qz, s), w = awq_tensors(rng, n, k, g, device)
    x = torch.from_numpy(rng.standard_normal((3, k)).astype(np.float16)).to(device)
    ref = x.double().cpu().numpy() @ w.T
    m = wt.W4A16Linear.from_awq(qw, qz, s, g)
    assert (m.in_features, m.out_features, m.scalar_type) == (k, n, "uint4")
    assert rel_err(m(x).cpu().numpy(), ref) <= TOL["float16"]

    q2, z2, s2 = random_layer(rng, n, k, g, asym=False)
    g_idx = rng.permutation(np.arange(k) // g).astype(np.int32)
    t = [torch.from_numpy(a).to(device) for a in (gptq_qweight(q2), gptq_qzeros(z2), s2, g_idx)]
    m2 = wt.W4A16Linear.from_gptq(*t, group_size=g, sym=True, desc_act=True)
    assert m2.perm is not None and m2.zeros is None
    assert rel_err(m2(x).cpu().numpy(), x.double().cpu().numpy() @ dequant_kn(q2, z2, s2, g_idx).T) <= TOL["float16"]

    prefix = "model.layers.0.self_attn.o_proj"
    w4a16.save_safetensors(tmp_path / "model.safetensors", {f"{prefix}.qweight": qw.cpu().numpy(),
                                                            f"{prefix}.qzeros": qz.cpu().numpy(),
                                                            f"{prefix}.scales": s.cpu().numpy()})
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": g, "zero_point": True, "version": "gemm"}}))
    m3 = wt.W4A16Linear.from_checkpoint(tmp_path, prefix, device=device)
    assert torch.equal(m3(x), m(x))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("wdtype", [torch.float16, torch.bfloat16, torch.float32])
def test_w4a16linear_from_float_linear(rng, device, wdtype):
    lin = torch.nn.Linear(256, 64, bias=True).to(wdtype).to(device)
    m = wt.W4A16Linear.from_linear(lin, group_size=128)
    assert m.qweight.device.type == device
    adt = torch.bfloat16 if wdtype == torch.bfloat16 else torch.float16
    x = torch.from_numpy(rng.standard_normal((4, 256)).astype(np.float32)).to(adt).to(device)
    y = m(x)
    # against the module's own dequantized weights in f64, and close to the float layer
    layer = w4a16.from_canonical(m.qweight.cpu().numpy(), _np16(m.scales), m.zeros.cpu().numpy(),
                                 _np16(m.bias), group_size=128, dtype="bfloat16" if adt == torch.bfloat16 else None)
    ref = x.double().cpu().numpy() @ layer.dequantize().astype(np.float64).T + _f64(m.bias)
    assert rel_err(y.double().cpu().numpy(), ref) <= TOL["float16" if adt == torch.float16 else "bfloat16"]
    full = lin(x.to(wdtype)).double().detach().cpu().numpy()
    assert rel_err(y.double().cpu().numpy(), full) <= 0.15  # 4-bit RTN of uniform weights: ~0.07


def _np16(t):
    t = t.detach().cpu()
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def _f64(t):
    return t.detach().cpu().double().numpy()


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_traces_the_ops(rng, device):
    lin = torch.nn.Linear(128, 32, bias=False).half().to(device)
    m = wt.W4A16Linear.from_linear(lin, group_size=64, scalar_type="uint4b8")
    x = torch.from_numpy(rng.standard_normal((2, 7, 128)).astype(np.float16)).to(device)
    eager = m(x)
    compiled = torch.compile(m, backend="aot_eager", fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled(x), eager, rtol=0, atol=0)
    x2 = x[:, :3]  # another M through the same dynamic graph
    torch.testing.assert_close(compiled(x2), m(x2), rtol=0, atol=0)


def test_gemm_cache_follows_the_weights(rng):
    import gc

    lin = torch.nn.Linear(128, 32, bias=False).half()
    m = wt.W4A16Linear.from_linear(lin, group_size=64, scalar_type="uint4b8")
    x = torch.from_numpy(rng.standard_normal((3, 128)).astype(np.float16))
    y = m(x)
    entries = len(wt._cache)
    assert torch.equal(m(x), y) and len(wt._cache) == entries  # built once
    m.scales.mul_(2)  # in place: a new tensor version, so the layer is built again, with doubled scales
    assert rel_err(m(x).double().numpy(), 2 * y.double().numpy()) <= 2e-3
    assert len(wt._cache) == entries  # the older version's entry went
    m.scales = m.scales / 2  # another tensor in the buffer (exactly the first scales): built again
    assert torch.equal(m(x), y) and len(wt._cache) == entries
    y2 = wt.gemm(x, m.qweight, m.scales, group_size=64, scalar_type="uint4b8", backend="cpu_reference")
    assert rel_err(y2.double().numpy(), y.double().numpy()) <= TOL["float16"]  # another backend: built again
    assert len(wt._cache) == entries and wt._layer_for(m.qweight, m.scales, None, None, None, 64, "uint4b8",
                                                       "cpu_reference").backend == "cpu_reference"
    with pytest.raises(w4a16.ShapeError) as err:  # x is checked on every call, also on a cache hit
        m(x[:, :64])
    assert str(err.value).startswith("x: expected float16 or bfloat16 [M, K=128]")
    with pytest.raises(w4a16.DTypeError):
        m(x.float())
    del m, err  # the error's traceback holds the op's frame, and so qweight
    gc.collect()
    assert len(wt._cache) == entries - 1  # the entry went with its qweight


@pytest.mark.skipif("cuda" not in DEVICES, reason="needs a GPU and a CUDA build of w4a16")
def test_gemm_runs_on_the_current_stream(rng):
    (qw, qz, s), w = awq_tensors(rng, 64, 256, 128, "cuda")
    m = wt.W4A16Linear.from_awq(qw, qz, s, 128)
    x = torch.from_numpy(rng.standard_normal((1, 256)).astype(np.float16)).cuda()
    m(x)  # prepare outside the side stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = m(x)
    side.synchronize()
    assert rel_err(y.cpu().numpy(), x.double().cpu().numpy() @ w.T) <= TOL["float16"]


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_cache_drops_the_host_copy_of_cuda_weights(rng, device):
    """CUDA weights: after the op's first call its cached layer holds no host copy, only the kernel's own device
    weights; another dtype or more rows than its binding's max_m rebuild it from the op's tensors. CPU weights
    keep theirs (the CPU kernels run on them)."""
    (qw, qz, s), w = awq_tensors(rng, 64, 256, 128, device)
    m = wt.W4A16Linear.from_awq(qw, qz, s, 128)
    x = torch.from_numpy(rng.standard_normal((2, 256)).astype(np.float16)).to(device)
    ref = x.double().cpu().numpy() @ w.T
    assert rel_err(m(x).cpu().numpy(), ref) <= TOL["float16"]
    layer = wt._cache[id(m.qweight)][1]
    assert layer.host_released == (device == "cuda")
    assert all(lin.holds_canonical == (device == "cpu") for lin in layer.linears)
    assert all(lin.owns_workspace == (device == "cpu") for lin in layer.linears)  # CUDA: the stream's shared one
    assert rel_err(m(x).cpu().numpy(), ref) <= TOL["float16"]  # the kept binding
    assert wt._cache[id(m.qweight)][1] is layer
    xb = x.to(torch.bfloat16)  # a binding the released layer lacks: rebuilt, the fp16 binding carried over
    assert rel_err(m(xb).float().cpu().numpy(), xb.double().cpu().numpy() @ w.T) <= TOL["bfloat16"]
    rebuilt = wt._cache[id(m.qweight)][1]
    assert rebuilt.host_released == (device == "cuda")
    assert {lin.dtype for lin in rebuilt.linears} == {"float16", "bfloat16"}
    big = torch.from_numpy(rng.standard_normal((4097, 256)).astype(np.float16)).to(device)
    assert rel_err(m(big).cpu().numpy(), big.double().cpu().numpy() @ w.T) <= TOL["float16"]
    assert max(lin.max_m for lin in wt._cache[id(m.qweight)][1].linears) >= 4097
    released = wt._cache[id(m.qweight)][1]
    released.drop_host()  # by hand: on CPU weights it takes the CPU bindings, and the next call rebuilds the layer
    assert rel_err(m(x).cpu().numpy(), ref) <= TOL["float16"]
    again = wt._cache[id(m.qweight)][1]
    assert (again is released) == (device == "cuda") and again.host_released == (device == "cuda")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_quantized_linear_takes_and_returns_torch(rng, device, dtype):
    n, k, g = 40, 128, 32
    q, z, s = random_layer(rng, n, k, g)
    layer = w4a16.from_awq(awq_pack(q), awq_pack(z), s, g)
    x = torch.from_numpy(rng.standard_normal((2, 3, k)).astype(np.float32)).to(dtype).to(device)
    y = layer(x)
    assert isinstance(y, torch.Tensor) and y.dtype == dtype and y.device == x.device and y.shape == (2, 3, n)
    ref = x.double().cpu().numpy().reshape(-1, k) @ dequant_kn(q, z, s, group_of(k, g)).T
    assert rel_err(y.double().cpu().numpy().reshape(-1, n), ref) <= TOL["float16" if dtype == torch.float16 else "bfloat16"]
    xt = x.transpose(0, 1)  # non-contiguous leading dims: reshaped (copied) to rows
    yt = layer(xt)
    assert yt.shape == (3, 2, n)
    torch.testing.assert_close(yt.float(), y.transpose(0, 1).float(), rtol=1e-2, atol=1e-2)
    if device == "cuda":
        assert layer.kernel.startswith("cuda")  # the registry picked a GPU kernel for a GPU tensor


# ---- w4a16::moe ------------------------------------------------------------------------------


def moe_experts(rng, e, h, i, g, scalar, device):
    """E random experts quantized by the library, stacked as MoE.from_canonical takes them (torch, on device),
    and the numpy f64 weights [(gate, up, down)] dequantized from them."""
    qs = [[w4a16.quantize(0.1 * rng.standard_normal(s).astype(np.float32), g, scalar) for s in ((i, h), (i, h), (h, i))]
          for _ in range(e)]
    t = [[q.tensors() for q in ex] for ex in qs]

    def stack(parts, key):
        if t[0][0][key] is None:
            return None
        return torch.from_numpy(np.stack([np.concatenate([ex[p][key] for p in parts]) for ex in t])).to(device)

    w13 = [stack((0, 1), k) for k in ("qweight", "scales", "zeros")]
    w2 = [stack((2,), k) for k in ("qweight", "scales", "zeros")]
    dense = [tuple(q.dequantize().astype(np.float64) for q in ex) for ex in qs]
    return w13, w2, dense


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scalar", ["uint4", "uint4b8"])
def test_moe_opcheck_and_matches_numpy(rng, device, dtype, scalar):
    e, h, i, g, t, k = 6, 128, 64, 64, 5, 2
    w13, w2, dense = moe_experts(rng, e, h, i, g, scalar, device)
    x = torch.from_numpy(rng.standard_normal((t, h)).astype(np.float32)).to(dtype).to(device)
    logits = torch.from_numpy(rng.standard_normal((t, e)).astype(np.float32)).to(device)
    weights, ids = torch.topk(torch.softmax(logits, dim=-1), k)  # int64 ids, as an engine has them
    weights = weights / weights.sum(dim=-1, keepdim=True)
    args = (x, ids, weights, w13[0], w13[1], w13[2], w2[0], w2[1], w2[2], g, scalar)
    opcheck(torch.ops.w4a16.moe.default, args)
    y = torch.ops.w4a16.moe(*args)
    assert y.shape == (t, h) and y.dtype == dtype and y.device == x.device
    ref = np_moe(x.double().cpu().numpy(), dense, ids.cpu().numpy(), weights.double().cpu().numpy())
    assert rel_err(y.double().cpu().numpy(), ref) <= TOL["float16" if dtype == torch.float16 else "bfloat16"]
    y32 = wt.moe(x, ids.to(torch.int32), weights, w13[0], w13[1], w2[0], w2[1], w13[2], w2[2], group_size=g,
                 scalar_type=scalar)
    assert torch.equal(y32, y)  # int32 ids: the same call


def test_moe_cache_follows_the_weights(rng):
    e, h, i, g = 4, 64, 32, 32
    w13, w2, dense = moe_experts(rng, e, h, i, g, "uint4b8", "cpu")
    x = torch.from_numpy(rng.standard_normal((3, h)).astype(np.float16))
    ids = torch.tensor([[0, 3], [2, 2], [1, 0]], dtype=torch.int32)
    weights = torch.tensor([[0.6, 0.4], [0.5, 0.5], [0.9, 0.1]])
    call = lambda: wt.moe(x, ids, weights, w13[0], w13[1], w2[0], w2[1], group_size=g)  # noqa: E731
    y = call()
    entries = len(wt._cache)
    assert torch.equal(call(), y) and len(wt._cache) == entries  # built once
    w2[1].mul_(2)  # in place: a new tensor version, so the layer is built again, with doubled down-projections
    assert rel_err(call().double().numpy(), 2 * y.double().numpy()) <= 2e-3
    assert len(wt._cache) == entries  # the older version's entry went
    with pytest.raises(w4a16.ArgumentError) as err:
        wt.moe(x, ids, weights, w13[0], w13[1], w2[0], w2[1], torch.zeros(1, dtype=torch.int32), group_size=g)
    assert str(err.value).startswith("w13_zeros: expected no zero-point tensor for uint4b8")
    with pytest.raises(w4a16.ShapeError) as err:
        wt.moe(x[:, :32], ids, weights, w13[0], w13[1], w2[0], w2[1], group_size=g)
    assert str(err.value).startswith("x:")


@pytest.mark.parametrize("device", DEVICES)
def test_moe_cache_drops_the_host_copy_of_cuda_experts(rng, device):
    """As gemm's: CUDA experts lose their host copy after the op's first call; a call of the other dtype rebuilds the
    layer from the op's tensors and keeps the CUDA layer prepared before. CPU experts keep theirs."""
    e, h, i, g = 4, 128, 64, 64  # the CUDA layer's whole tc16x64 tiles
    w13, w2, dense = moe_experts(rng, e, h, i, g, "uint4", device)
    x = torch.from_numpy(rng.standard_normal((3, h)).astype(np.float16)).to(device)
    ids = torch.tensor([[0, 3], [2, 2], [1, 0]], dtype=torch.int32, device=device)
    weights = torch.tensor([[0.6, 0.4], [0.5, 0.5], [0.9, 0.1]], device=device)
    call = lambda x: wt.moe(x, ids, weights, w13[0], w13[1], w2[0], w2[1], w13[2], w2[2], group_size=g,  # noqa: E731
                            scalar_type="uint4")
    def ref(x):
        return np_moe(x.double().cpu().numpy(), dense, ids.cpu().numpy(), weights.double().cpu().numpy())

    assert rel_err(call(x).double().cpu().numpy(), ref(x)) <= TOL["float16"]
    layer = wt._cache[id(w13[0])][1]
    assert layer.host_released == (device == "cuda")
    assert rel_err(call(x).double().cpu().numpy(), ref(x)) <= TOL["float16"] and wt._cache[id(w13[0])][1] is layer
    xb = x.to(torch.bfloat16)
    assert rel_err(call(xb).double().cpu().numpy(), ref(xb)) <= TOL["bfloat16"]
    rebuilt = wt._cache[id(w13[0])][1]
    assert rebuilt.host_released == (device == "cuda")
    if device == "cuda":
        assert rebuilt is not layer and sorted(p["dtype"] for p in rebuilt.prepared) == ["bfloat16", "float16"]
        assert all(p["workspace_bytes"] == 0 for p in rebuilt.prepared)  # the stream's shared one, not its own
    assert rel_err(call(x).double().cpu().numpy(), ref(x)) <= TOL["float16"] and wt._cache[id(w13[0])][1] is rebuilt
    rebuilt.drop_host()  # by hand: on CPU experts the next call rebuilds the layer (CUDA: its prepared layers serve)
    assert rel_err(call(x).double().cpu().numpy(), ref(x)) <= TOL["float16"]
    assert (wt._cache[id(w13[0])][1] is rebuilt) == (device == "cuda")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("router_dtype", ["float16", "bfloat16"])
def test_w4a16moe_module(rng, device, router_dtype):
    e, h, i, g, k = 6, 128, 64, 64, 2
    w13, w2, dense = moe_experts(rng, e, h, i, g, "uint4", "cpu")
    router32 = (0.1 * rng.standard_normal((e, h))).astype(np.float32)
    router = torch.from_numpy(router32).to(torch.float16 if router_dtype == "float16" else torch.bfloat16)
    m = wt.W4A16MoE(w13[0], w13[1], w2[0], w2[1], w13[2], w2[2], router, group_size=g, top_k=k).to(device)
    assert (m.experts, m.hidden, m.intermediate, m.scalar_type) == (e, h, i, "uint4")
    x = torch.from_numpy(rng.standard_normal((7, h)).astype(np.float32)).to(torch.float16).to(device)
    y = m(x)
    x64 = x.double().cpu().numpy()
    logits = x.float().cpu().numpy().astype(np.float64) @ router.double().numpy().T
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ids = np.argsort(-p, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(p, ids, axis=1)
    assert rel_err(y.double().cpu().numpy(), np_moe(x64, dense, ids, w / w.sum(axis=1, keepdims=True))) <= TOL["float16"]
    ids_t, w_t = m.route(x)
    assert torch.equal(m(x, ids_t, w_t), y)
    with pytest.raises(w4a16.ArgumentError) as err:
        m(x, topk_ids=ids_t)
    assert str(err.value).startswith("topk_weights:")

    compiled = torch.compile(m, backend="aot_eager", fullgraph=True, dynamic=True)  # routing + the op traced
    torch.testing.assert_close(compiled(x), y, rtol=0, atol=0)
    torch.testing.assert_close(compiled(x[:3]), m(x[:3]), rtol=0, atol=0)

    # The same layer through w4a16.MoE (its tensors() and from_moe): identical buffers, identical output.
    moe = w4a16.MoE.from_canonical(*(a.numpy() for a in (w13[0], w13[1], w2[0], w2[1], w13[2], w2[2])), group_size=g,
                                   router=router)
    m2 = wt.W4A16MoE.from_moe(moe, device=device, top_k=k)
    for name in ("w13_qweight", "w13_scales", "w13_zeros", "w2_qweight", "w2_scales", "w2_zeros", "router"):
        assert torch.equal(getattr(m2, name).cpu(), getattr(m, name).cpu()), name
    assert torch.equal(m2(x), y)
    assert moe.tensors()["w13_zeros"].shape == (e, 2 * i // 8, h // g)
