"""w4a16.torch's one-copy path: W4A16PreparedLinear (buffers in the CUDA kernels' prepared layout), the op
w4a16::gemm_tc that runs them in place, prepare_modules. The CPU cases check what refuses and what traces; the CUDA
cases (a GPU and a CUDA build of w4a16) check the outputs bit for bit against W4A16Linear, that the swap frees a copy
of the weights on the GPU, CUDA-graph replay and a state_dict round trip."""

import gc
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed; w4a16.torch needs it")

import w4a16  # noqa: E402
import w4a16.torch as wt  # noqa: E402
from conftest import TOL, awq_pack, dequant_kn, group_of, random_layer, rel_err  # noqa: E402

CUDA = torch.cuda.is_available() and w4a16.has_cuda
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a GPU and a CUDA build of w4a16")


def canonical_module(rng, n, k, g, device, *, bias=False, act_order=False, bf16_scales=False):
    """A W4A16Linear (AWQ-converted, optionally with bias and a GPTQ act-order perm) and its f64 weights [N, K]."""
    q, z, s = random_layer(rng, n, k, g, scale_dtype=np.float16)
    t = [torch.from_numpy(awq_pack(q)), torch.from_numpy(awq_pack(z)), torch.from_numpy(s)]
    m = wt.W4A16Linear.from_awq(*t, g)
    w = dequant_kn(q, z, s, group_of(k, g))  # [N, K]
    if act_order:  # perm[j] = the input channel of column j (canonical): W's columns in perm order, x gathered
        perm = rng.permutation(k).astype(np.int32)
        m.perm = torch.from_numpy(perm)
        w_full = np.empty_like(w)
        w_full[:, perm] = w
        w = w_full
    if bias:
        m.bias = torch.from_numpy(rng.standard_normal(n).astype(np.float16))
    if bf16_scales:
        m.scales = m.scales.to(torch.bfloat16)
        if m.bias is not None:
            m.bias = m.bias.to(torch.bfloat16)
    return m.to(device), w


def tc_shapes(n, k, g, zeros):
    np_, kp, groups = (n + 63) // 64 * 64, (k + 63) // 64 * 64, 1 if g == -1 else k // g
    s = {"qweight": (np_ // 16, kp // 64, 32, 4), "scales": (groups, np_)}
    if zeros:
        s["zeros"] = (groups, np_ // 16, 8)
    return s


def test_prepared_module_from_explicit_tensors_refuses_cpu_and_wrong_inputs():
    n, k, g = 64, 256, 128
    sh = tc_shapes(n, k, g, True)
    m = wt.W4A16PreparedLinear(torch.zeros(sh["qweight"], dtype=torch.int32), torch.zeros(sh["scales"], dtype=torch.float16),
                               torch.zeros(sh["zeros"], dtype=torch.uint8), in_features=k, out_features=n,
                               group_size=g, scalar_type="uint4")
    assert "layout=cuda.tc16x64.v1" in repr(m) and set(m.state_dict()) == {"qweight", "scales", "zeros"}
    with pytest.raises(w4a16.UnsupportedError) as e:
        m(torch.ones(2, k, dtype=torch.float16))
    assert "x: expected a CUDA tensor (the prepared layout cuda.tc16x64.v1" in str(e.value)
    if CUDA:
        m = m.cuda()
        with pytest.raises(w4a16.DTypeError) as e:
            m(torch.ones(2, k, dtype=torch.bfloat16, device="cuda"))
        assert "x: expected torch.float16 (the activation dtype" in str(e.value)
        with pytest.raises(w4a16.ShapeError):
            m(torch.ones(2, k - 8, dtype=torch.float16, device="cuda"))
        bad = wt.W4A16PreparedLinear(m.qweight[:, :2].contiguous(), m.scales, m.zeros, in_features=k, out_features=n,
                                     group_size=g, scalar_type="uint4")
        with pytest.raises(w4a16.ShapeError) as e:
            bad(torch.ones(2, k, dtype=torch.float16, device="cuda"))
        assert "qweight: expected int32 [4, 4, 32, 4]" in str(e.value)
        noz = wt.W4A16PreparedLinear(m.qweight, m.scales, None, in_features=k, out_features=n, group_size=g,
                                     scalar_type="uint4")
        with pytest.raises(w4a16.ArgumentError) as e:
            noz(torch.ones(2, k, dtype=torch.float16, device="cuda"))
        assert "zeros: expected uint8 [2, 4, 8] on the CUDA device (layout cuda.tc16x64.v1), got no array" in str(e.value)


def test_gemm_tc_traces_with_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    n, k, g = 96, 256, 64
    sh = tc_shapes(n, k, g, False)
    with FakeTensorMode():
        x = torch.empty(3, 5, k, dtype=torch.bfloat16)
        y = torch.ops.w4a16.gemm_tc(x, torch.empty(sh["qweight"], dtype=torch.int32),
                                    torch.empty(sh["scales"], dtype=torch.bfloat16), None, None, None, n, k, g, "uint4b8")
        assert y.shape == (3, 5, n) and y.dtype == torch.bfloat16
        with pytest.raises(RuntimeError):  # x in another dtype than the layout's scales
            torch.ops.w4a16.gemm_tc(x.to(torch.float16), torch.empty(sh["qweight"], dtype=torch.int32),
                                    torch.empty(sh["scales"], dtype=torch.bfloat16), None, None, None, n, k, g, "uint4b8")


def test_prepare_modules_leaves_cpu_modules(rng):
    m, _ = canonical_module(rng, 64, 256, 128, "cpu")
    model = torch.nn.Sequential(m, torch.nn.ReLU())
    assert wt.prepare_modules(model) == 0 and model[0] is m


@needs_cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("scalar", ["uint4", "uint4b8"])
@pytest.mark.parametrize("extras", [False, True])
def test_prepared_matches_w4a16linear_bit_for_bit(rng, dtype, scalar, extras):
    """The same kernel on the same layout bytes: the prepared module's outputs equal W4A16Linear's bit for bit (decode
    and prefill paths), within the f64 tolerance; no layer is cached for it beyond the adopted binding."""
    n, k, g = 192, 512, 128
    m, w = canonical_module(rng, n, k, g, "cuda", bias=extras, act_order=extras, bf16_scales=dtype == "bfloat16")
    if scalar == "uint4b8":  # the same weights read as uint4b8 need no zeros: z = 8 everywhere
        m.zeros = None
        m.scalar_type = "uint4b8"
    p = wt.W4A16PreparedLinear.from_linear(m, dtype)
    assert p.qweight.shape == tc_shapes(n, k, g, scalar == "uint4")["qweight"] and p.qweight.is_cuda
    assert (p.zeros is None) == (scalar == "uint4b8") and (p.bias is None) != extras and (p.perm is None) != extras
    tdt = torch.float16 if dtype == "float16" else torch.bfloat16
    for m_rows in (1, 5, 33, 300):
        x = torch.from_numpy(rng.standard_normal((m_rows, k)).astype(np.float32)).to(tdt).cuda()
        y0, y1 = m(x), p(x)
        assert torch.equal(y0, y1), f"M={m_rows}"
        if scalar == "uint4":
            ref = x.double().cpu().numpy() @ w.T + (0 if m.bias is None else m.bias.double().cpu().numpy())
            assert rel_err(y1.float().cpu().numpy(), ref) <= TOL[dtype]
    lin = wt._cache[id(p.qweight)][1]
    assert lin.adopted and not lin.holds_canonical and not lin.owns_workspace and lin.max_m >= 300
    need = max(lin.workspace_for(m_rows) for m_rows in (1, 5, 33, 300))
    shared = wt._workspaces.get((torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream), [])
    assert need == 0 or shared[-1].numel() >= need  # the one workspace of this stream, not the binding's


@needs_cuda
def test_prepare_modules_frees_a_copy_and_replays_in_a_graph(rng):
    n, k, g = 8192, 4096, 128
    m, w = canonical_module(rng, n, k, g, "cuda")
    model = torch.nn.Sequential(m)
    x = torch.from_numpy(rng.standard_normal((4, k)).astype(np.float16)).cuda()
    y0 = model(x)  # the canonical tensors and the op's prepared copy on the GPU
    assert torch.equal(y0, y0)  # torch's kernels used below, loaded (lazily, into device memory) before counting
    canonical_bytes = sum(t.numel() * t.element_size() for t in (m.qweight, m.scales, m.zeros))
    del m
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    free0 = torch.cuda.mem_get_info()[0]
    assert wt.prepare_modules(model) == 1 and isinstance(model[0], wt.W4A16PreparedLinear)
    y1 = model(x)
    assert torch.equal(y0, y1)
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    free1 = torch.cuda.mem_get_info()[0]
    # Freed: the canonical tensors and the library's prepared copy; allocated: the layout's arrays (one copy).
    assert free1 - free0 >= 0.8 * canonical_bytes, (free0, free1, canonical_bytes)
    assert wt.release_workspaces() >= 0 and not wt._workspaces
    # CUDA graph: captured at M = 4, replayed on new x written into the captured input.
    static_x = x.clone()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        model(static_x)  # warm-up on the capture stream
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = model(static_x)
    for _ in range(2):
        static_x.copy_(torch.from_numpy(rng.standard_normal((4, k)).astype(np.float16)).cuda())
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(static_y, model(static_x))
        assert rel_err(static_y.float().cpu().numpy(), static_x.double().cpu().numpy() @ w.T) <= TOL["float16"]
    del graph  # (it runs on the module's arrays)
    # The module's cache entry goes with it: no reference from the cached binding keeps the arrays alive.
    entries = len(wt._cache)
    held = torch.cuda.memory_allocated()
    layer_bytes = sum(t.numel() * t.element_size() for t in model[0].buffers())
    model[0] = torch.nn.Identity()
    gc.collect()
    assert len(wt._cache) == entries - 1 and held - torch.cuda.memory_allocated() >= layer_bytes


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gemm_tc_opcheck_and_compile(rng, dtype):
    """torch.library.opcheck of w4a16::gemm_tc (schema, fake kernel, autograd registration, AOT dispatch with dynamic
    shapes) and torch.compile(fullgraph=True) of the module: the same outputs as eager."""
    m, _ = canonical_module(rng, 128, 256, 64, "cuda", bias=True, bf16_scales=dtype == torch.bfloat16)
    p = wt.W4A16PreparedLinear.from_linear(m)
    x = torch.from_numpy(rng.standard_normal((2, 3, 256)).astype(np.float32)).to(dtype).cuda()
    args = (x, p.qweight, p.scales, p.zeros, p.bias, None, 128, 256, 64, "uint4", "")
    torch.library.opcheck(torch.ops.w4a16.gemm_tc.default, args,
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))
    compiled = torch.compile(p, fullgraph=True)
    assert torch.equal(compiled(x), p(x)) and p(x).shape == (2, 3, 128)


@needs_cuda
def test_prepared_state_dict_round_trip(rng):
    m, _ = canonical_module(rng, 128, 256, 64, "cuda", bias=True)
    p = wt.W4A16PreparedLinear.from_linear(m)
    q = wt.W4A16PreparedLinear(*(torch.empty_like(t) for t in (p.qweight, p.scales, p.zeros, p.bias)),
                               in_features=256, out_features=128, group_size=64, scalar_type="uint4")
    q.load_state_dict(p.state_dict())
    x = torch.from_numpy(rng.standard_normal((3, 256)).astype(np.float16)).cuda()
    assert torch.equal(p(x), q(x)) and torch.equal(p(x), m(x))


def moe_module(rng, e, h, i, g, scalar, device, router_dtype=torch.float16):
    """A W4A16MoE with a router (test_torch_ops' experts) and its f64 experts."""
    from test_torch_ops import moe_experts

    w13, w2, dense = moe_experts(rng, e, h, i, g, scalar, "cpu")
    router = torch.from_numpy((0.1 * rng.standard_normal((e, h))).astype(np.float32)).to(router_dtype)
    m = wt.W4A16MoE(w13[0], w13[1], w2[0], w2[1], w13[2], w2[2], router, group_size=g, top_k=2)
    return m.to(device), dense


def test_prepared_moe_refuses_cpu_and_traces_with_fake_tensors(rng):
    from torch._subclasses.fake_tensor import FakeTensorMode

    e, h, i, g = 4, 128, 64, 64
    shapes = {"w13_qweight": (e, 2 * i // 16, h // 64, 128), "w13_scales": (e, h // g, 2 * i),
              "w2_qweight": (e, h // 16, i // 64, 128), "w2_scales": (e, i // g, h)}
    t = {n: torch.zeros(s, dtype=torch.int32 if n.endswith("qweight") else torch.float16) for n, s in shapes.items()}
    p = wt.W4A16PreparedMoE(t["w13_qweight"], t["w13_scales"], t["w2_qweight"], t["w2_scales"], group_size=g,
                            scalar_type="uint4b8", top_k=2)
    assert (p.experts, p.hidden, p.intermediate) == (e, h, i) and "layout=cuda.moe.tc16x64.v1" in repr(p)
    ids = torch.zeros(3, 2, dtype=torch.int32)
    w = torch.full((3, 2), 0.5)
    with pytest.raises(w4a16.UnsupportedError) as err:
        p(torch.ones(3, h, dtype=torch.float16), ids, w)
    assert "the prepared layout cuda.moe.tc16x64.v1" in str(err.value)
    with pytest.raises(w4a16.ArgumentError):  # no router: routing must be given
        p(torch.ones(3, h, dtype=torch.float16))
    with FakeTensorMode():
        f = {n: torch.empty(s, dtype=torch.int32 if n.endswith("qweight") else torch.float16) for n, s in shapes.items()}
        x = torch.empty(5, h, dtype=torch.float16)
        y = torch.ops.w4a16.moe_tc(x, torch.empty(5, 2, dtype=torch.int32), torch.empty(5, 2), f["w13_qweight"],
                                   f["w13_scales"], None, f["w2_qweight"], f["w2_scales"], None, g, "uint4b8")
        assert y.shape == (5, h) and y.dtype == torch.float16


@needs_cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("scalar", ["uint4", "uint4b8"])
def test_prepared_moe_matches_w4a16moe_bit_for_bit(rng, dtype, scalar):
    """The same CUDA layer on the same layout bytes: outputs equal W4A16MoE's bit for bit at T = 1, 7, 64 (the direct,
    ring and grouped paths), routed by the router or given; no workspace of the layer's own; prepare_modules swaps the
    module and frees its canonical experts."""
    e, h, i, g = 8, 256, 128, 64
    m, dense = moe_module(rng, e, h, i, g, scalar, "cuda")
    tdt = torch.float16 if dtype == "float16" else torch.bfloat16
    if dtype == "bfloat16":
        m.w13_scales, m.w2_scales = m.w13_scales.to(tdt), m.w2_scales.to(tdt)
    p = wt.W4A16PreparedMoE.from_module(m, dtype)
    assert (p.w13_zeros is None) == (scalar == "uint4b8") and torch.equal(p.router, m.router)
    for t in (1, 7, 64):
        x = torch.from_numpy(rng.standard_normal((t, h)).astype(np.float32)).to(tdt).cuda()
        assert torch.equal(m(x), p(x)), f"T={t}"
        ids, w = m.route(x)
        assert torch.equal(m(x, ids, w), p(x, ids, w)), f"T={t} (given routing)"
    layer = wt._cache[id(p.w13_qweight)][1]
    assert layer.workspace_for(64, 2) > 0 and layer.device_bytes == sum(
        v.numel() * v.element_size() for n, v in p.named_buffers() if n != "router")
    model = torch.nn.Sequential(m)
    del m
    assert wt.prepare_modules(model, dtype) == 1 and isinstance(model[0], wt.W4A16PreparedMoE)
    x = torch.from_numpy(rng.standard_normal((7, h)).astype(np.float32)).to(tdt).cuda()
    assert torch.equal(model[0](x), p(x))


def moe_folder(d, m):
    """The experts and router of W4A16MoE `m` (CPU, uint4) written as a Hugging Face AWQ MoE folder (layer 0)."""
    t = {n: getattr(m, n).numpy() for n in ("w13_qweight", "w13_scales", "w13_zeros", "w2_qweight", "w2_scales", "w2_zeros")}
    i, h = m.intermediate, m.hidden
    layers = {}
    for e in range(m.experts):  # gate rows, then up rows of w13; zeros packed 8 rows a word
        base = f"model.layers.0.mlp.experts.{e}."
        for name, rows, zrows, key in (("gate_proj", slice(0, i), slice(0, i // 8), "w13"),
                                       ("up_proj", slice(i, 2 * i), slice(i // 8, i // 4), "w13"),
                                       ("down_proj", slice(None), slice(None), "w2")):
            layers[base + name] = w4a16.from_canonical(t[key + "_qweight"][e][rows], t[key + "_scales"][e][rows],
                                                       t[key + "_zeros"][e][zrows], group_size=m.group_size)
    w4a16.save_checkpoint(d, layers, format="awq", dense={"model.layers.0.mlp.gate.weight": m.router.numpy()},
                          config={"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": h,
                                  "moe_intermediate_size": i, "num_experts": m.experts, "num_experts_per_tok": m.top_k,
                                  "norm_topk_prob": True})
    return t


def test_moe_folder_round_trips(rng, tmp_path):
    """The folder moe_folder writes loads back as the same stacked experts (the CUDA test below builds on it)."""
    m, _ = moe_module(rng, 4, 128, 64, 64, "uint4", "cpu")
    t = moe_folder(tmp_path, m)
    back = w4a16.MoE.load(tmp_path, 0).tensors()
    for n, a in t.items():
        np.testing.assert_array_equal(back[n], a, err_msg=n)


@needs_cuda
def test_prepared_from_checkpoint_matches_the_canonical_modules(rng, tmp_path):
    """from_checkpoint of both prepared modules: the same outputs as W4A16Linear / W4A16MoE made from that folder."""
    n, k, g = 128, 256, 64
    q, z, s = random_layer(rng, n, k, g)
    prefix = "model.layers.0.self_attn.o_proj"
    w4a16.save_safetensors(tmp_path / "model.safetensors", {f"{prefix}.qweight": awq_pack(q), f"{prefix}.qzeros": awq_pack(z),
                                                            f"{prefix}.scales": s})
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": g, "zero_point": True, "version": "gemm"}}))
    x = torch.from_numpy(rng.standard_normal((3, k)).astype(np.float16)).cuda()
    p = wt.W4A16PreparedLinear.from_checkpoint(tmp_path, prefix)
    assert torch.equal(p(x), wt.W4A16Linear.from_checkpoint(tmp_path, prefix, device="cuda")(x))
    assert rel_err(p(x).cpu().numpy(), x.double().cpu().numpy() @ dequant_kn(q, z, s, group_of(k, g)).T) <= TOL["float16"]

    m, _ = moe_module(rng, 4, 128, 64, 64, "uint4", "cpu")
    moe_folder(tmp_path / "moe", m)
    xm = torch.from_numpy(rng.standard_normal((5, 128)).astype(np.float16)).cuda()
    pm = wt.W4A16PreparedMoE.from_checkpoint(tmp_path / "moe", 0)
    assert pm.top_k == 2 and torch.equal(pm(xm), wt.W4A16MoE.from_checkpoint(tmp_path / "moe", 0, device="cuda")(xm))


def test_shared_workspace_grows_by_doubling_and_keeps_what_it_outgrew():
    """The ops' workspace per (device, stream): none for 0 bytes; at least what a call asks, grown to twice the last when
    a call needs more (earlier buffers kept: a captured CUDA graph may still use one); per stream; released at once.
    (The logic is the same on any device: checked here on CPU tensors.)"""
    wt.release_workspaces()
    x = torch.empty(1)
    assert wt._workspace(x, 7, 0) == (0, 0) and not wt._workspaces
    p1, n1 = wt._workspace(x, 7, 1000)
    assert n1 == 1000 and wt._workspace(x, 7, 600) == (p1, 1000)  # fits: the same buffer
    p2, n2 = wt._workspace(x, 7, 1500)
    assert n2 == 2000 and p2 != p1 and len(wt._workspaces[(x.get_device(), 7)]) == 2
    assert wt._workspace(x, 7, 5000)[1] == 5000  # more than twice: what the call asks
    assert wt._workspace(x, 8, 10)[1] == 10  # another stream: its own
    assert wt.release_workspaces() == 1000 + 2000 + 5000 + 10 and not wt._workspaces
