"""w4a16.load_moe / MoE on small checkpoints written by the library's own writer
(w4a16.save_checkpoint), checked against an independent numpy f64 MoE: softmax top-k routing
(renormalized or not), silu(gate) * up, down, the weighted sum over the k experts, with the
experts' weights from QuantizedLinear.dequantize() of the layers the checkpoint was written from.
CPU and numpy only; the CUDA case runs only with a CUDA build, a GPU and torch with CUDA."""

import json

import numpy as np
import pytest

import w4a16
from conftest import TOL, np_moe, rel_err

H, I, E, G = 128, 64, 8, 64  # hidden, intermediate per expert, experts, group size
FORMATS = [("awq", "uint4"), ("gptq", "uint4b8"), ("gptq", "uint4")]


def write_moe_checkpoint(d, rng, fmt, scalar, scale_dtype, layer=0, experts=E, router_dtype="float16", mixtral=False,
                         extra=()):
    """Layer `layer` of a Qwen3-MoE-like folder; returns ([(gate, up, down)] float64 weights, router).
    router_dtype "bfloat16": the router stored as BF16 (written from its bits). mixtral: Mixtral's names
    (block_sparse_moe.experts.E.{w1, w3, w2}, block_sparse_moe.gate.weight). extra: more quantized [I, H] linears
    under the block (e.g. "shared_expert.gate_proj")."""
    base = f"model.layers.{layer}.{'block_sparse_moe' if mixtral else 'mlp'}."
    names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    layers, dense = {}, []
    for e in range(experts):
        shapes = dict(zip(names, ((I, H), (I, H), (H, I))))
        ws = []
        for name, shape in shapes.items():
            w = w4a16.quantize(0.1 * rng.standard_normal(shape).astype(np.float32), G, scalar, scale_dtype=scale_dtype)
            layers[f"{base}experts.{e}.{name}"] = w
            ws.append(w.dequantize().astype(np.float64))
        dense.append(tuple(ws))
    for name in extra:
        layers[base + name] = w4a16.quantize(0.1 * rng.standard_normal((I, H)).astype(np.float32), G, scalar,
                                             scale_dtype=scale_dtype)
    router32 = (0.1 * rng.standard_normal((experts, H))).astype(np.float32)
    if router_dtype == "bfloat16":
        router = w4a16.float32_to_bfloat16_bits(router32)
        router64 = w4a16.bfloat16_bits_to_float32(router).astype(np.float64)
    else:
        router = router32.astype(np.float16)
        router64 = router.astype(np.float64)
    w4a16.save_checkpoint(d, layers, format=fmt, dense={f"{base}gate.weight": router},
                          config={"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
                                  "hidden_size": H, "moe_intermediate_size": I, "num_experts": experts,
                                  "num_experts_per_tok": 2, "norm_topk_prob": True},
                          dtype=router_dtype if router_dtype == "bfloat16" else None)
    return dense, router64


@pytest.fixture(scope="module", params=FORMATS, ids=lambda p: f"{p[0]}-{p[1]}")
def ckpt(request, tmp_path_factory):
    fmt, scalar = request.param
    seed = np.random.SeedSequence().entropy
    print(f"checkpoint seed {seed}")
    rng = np.random.default_rng(seed)
    d = tmp_path_factory.mktemp(f"moe-{fmt}-{scalar}")
    experts, router = write_moe_checkpoint(d, rng, fmt, scalar, "float16")
    return dict(dir=d, fmt=fmt, scalar=scalar, experts=experts, router=router, moe=w4a16.load_moe(d, 0))


# ---- the numpy oracle ------------------------------------------------------------------------


def np_route(x64, router64, k, renormalize=True):
    logits = x64 @ router64.T
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ids = np.argsort(-p, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(p, ids, axis=1)
    if renormalize:
        w = w / w.sum(axis=1, keepdims=True)
    return ids.astype(np.int32), w


def make_x(rng, t, dtype, shape=None):
    """x as passed (float16, or bfloat16 bits in uint16) and its exact values in float64."""
    x32 = rng.standard_normal(shape or (t, H)).astype(np.float32)
    if dtype == "float16":
        x = x32.astype(np.float16)
        return x, x.astype(np.float64)
    bits = w4a16.float32_to_bfloat16_bits(x32)
    return bits, w4a16.bfloat16_bits_to_float32(bits).astype(np.float64)


def values(y, dtype):
    return (y if dtype == "float16" else w4a16.bfloat16_bits_to_float32(y)).astype(np.float64)


def kw(dtype):
    return {"dtype": "bfloat16"} if dtype == "bfloat16" else {}


# ---- loading ---------------------------------------------------------------------------------


def test_load_properties_and_repr(ckpt):
    moe = ckpt["moe"]
    assert isinstance(moe, w4a16.MoE)
    assert (moe.hidden, moe.intermediate, moe.experts, moe.group_size) == (H, I, E, G)
    assert (moe.scalar_type, moe.scale_dtype, moe.router_dtype) == (ckpt["scalar"], "float16", "float16")
    # packed 4-bit weights + scales (+ packed zeros for uint4) of w13 [E, 2I, H] and w2 [E, H, I]
    q = E * 3 * I * H // 2
    s = E * (2 * I * (H // G) + H * (I // G)) * 2
    z = E * (2 * I * (H // G) + H * (I // G)) // 2 if ckpt["scalar"] == "uint4" else 0
    assert moe.bytes == q + s + z
    assert repr(moe) == (f"MoE(E={E} H={H} I={I} g={G} {ckpt['scalar']}, scales float16, router float16, top 2, "
                         f"{moe.bytes} bytes)")
    assert moe.prepared == []
    # the routing of config.json (the fixture writes num_experts_per_tok 2, norm_topk_prob true)
    assert (moe.top_k, moe.renormalize) == (2, True)
    assert moe.routing_from == "config.json: num_experts_per_tok = 2, norm_topk_prob = true"


def test_layout_arrays_of_the_cuda_layer(ckpt):
    """The stacked layout the CUDA layer runs (what w4a16.torch.W4A16PreparedMoE keeps on the GPU): names, dtypes and
    shapes, bfloat16 as uint16 bits; a CPU-only build refuses (the layout is the CUDA layer's)."""
    moe = ckpt["moe"]
    if not w4a16.has_cuda:
        with pytest.raises(w4a16.UnsupportedError) as e:
            moe.layout_arrays()
        assert "a CUDA build of w4a16" in str(e.value)
        return
    zeros = ckpt["scalar"] == "uint4"
    for dtype, sd in (("float16", np.float16), ("bfloat16", np.uint16)):
        a = moe.layout_arrays(dtype)
        want = {"w13_qweight": (np.int32, (E, 2 * I // 16, H // 64, 128)), "w13_scales": (sd, (E, H // G, 2 * I)),
                "w2_qweight": (np.int32, (E, H // 16, I // 64, 128)), "w2_scales": (sd, (E, I // G, H))}
        if zeros:
            want.update({"w13_zeros": (np.uint8, (E, H // G, I)), "w2_zeros": (np.uint8, (E, I // G, H // 2))})
        assert {n: (v.dtype, v.shape) for n, v in a.items()} == {n: (np.dtype(d), s) for n, (d, s) in want.items()}
    assert moe.bytes == sum(v.nbytes for v in moe.layout_arrays().values())  # H, I multiples of 64: no padding
    # _core.adopt_moe (W4A16PreparedMoE's call) reads the {name: array} dict first: a value that is no array is refused
    # by name; host arrays are read and then refused as not on the device (or, without a GPU, by the device query).
    a = moe.layout_arrays("float16")
    spec = (H, I, E, G, ckpt["scalar"], "float16", 0, False)
    with pytest.raises(w4a16.ArgumentError) as e:
        w4a16._core.adopt_moe({**a, "w2_scales": None}, *spec)
    assert "w2_scales: expected an array" in str(e.value) and "got an object of type NoneType" in str(e.value)
    with pytest.raises((w4a16.ArgumentError, w4a16.CudaError)) as e:
        w4a16._core.adopt_moe(a, *spec)
    assert "cuda" in str(e.value).lower()


def test_load_errors(ckpt, tmp_path):
    with pytest.raises(w4a16.NotFoundError) as e:
        w4a16.load_moe(ckpt["dir"], 3)
    assert "model.layers.3.mlp.gate.weight" in str(e.value)
    with pytest.raises(w4a16.ArgumentError) as e:
        w4a16.load_moe(ckpt["dir"], -1)
    assert str(e.value).startswith("layer:")
    with pytest.raises(w4a16.Error):
        w4a16.load_moe(tmp_path / "no-such-folder", 0)


# ---- routing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [1, 3, 7])
@pytest.mark.parametrize("renormalize", [True, False])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_route_matches_numpy(ckpt, rng, t, renormalize, dtype):
    x, x64 = make_x(rng, t, dtype)
    ids, w = ckpt["moe"].route(x, top_k=2, renormalize=renormalize, **kw(dtype))
    assert ids.dtype == np.int32 and w.dtype == np.float32 and ids.shape == w.shape == (t, 2)
    ref_ids, ref_w = np_route(x64, ckpt["router"], 2, renormalize)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)
    if renormalize:
        np.testing.assert_allclose(w.sum(axis=1), 1, rtol=1e-6)
    else:
        assert np.all(w.sum(axis=1) < 1)


def test_route_top_k_bounds(ckpt, rng):
    x, _ = make_x(rng, 2, "float16")
    ids, _ = ckpt["moe"].route(x, top_k=E)
    np.testing.assert_array_equal(np.sort(ids, axis=1), np.tile(np.arange(E, dtype=np.int32), (2, 1)))
    for k in (0, E + 1):
        with pytest.raises(w4a16.ArgumentError) as e:
            ckpt["moe"].route(x, top_k=k)
        assert str(e.value).startswith("top_k:") and f"experts = {E}" in str(e.value)


# ---- the layer -------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [1, 2, 7])
@pytest.mark.parametrize("renormalize", [True, False])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_call_matches_numpy(ckpt, rng, t, renormalize, dtype):
    moe = ckpt["moe"]
    x, x64 = make_x(rng, t, dtype)
    y = moe(x, top_k=2, renormalize=renormalize, **kw(dtype))
    assert y.shape == (t, H) and y.dtype == x.dtype
    ids, w = np_route(x64, ckpt["router"], 2, renormalize)
    ref = np_moe(x64, ckpt["experts"], ids, w)
    assert rel_err(values(y, dtype), ref) <= TOL[dtype]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_one_token_as_a_vector(ckpt, rng, dtype):
    x, x64 = make_x(rng, 1, dtype, shape=(H,))
    y = ckpt["moe"](x, top_k=2, **kw(dtype))
    assert y.shape == (H,)
    ids, w = np_route(x64[None], ckpt["router"], 2)
    assert rel_err(values(y, dtype), np_moe(x64[None], ckpt["experts"], ids, w)[0]) <= TOL[dtype]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reference_agrees(ckpt, rng, dtype):
    moe = ckpt["moe"]
    x, x64 = make_x(rng, 5, dtype)
    ids, w = moe.route(x, top_k=2, **kw(dtype))
    ref = moe.reference(x, ids, w, **kw(dtype))
    assert ref.shape == (5, H) and ref.dtype == x.dtype
    oracle = np_moe(x64, ckpt["experts"], ids, w.astype(np.float64))
    # the library's oracle rounds once to the activation dtype: half an ulp of it
    assert rel_err(values(ref, dtype), oracle) <= (1e-3 if dtype == "float16" else 8e-3)
    y = moe(x, topk_ids=ids, topk_weights=w, **kw(dtype))
    assert rel_err(values(y, dtype), values(ref, dtype)) <= TOL[dtype]
    np.testing.assert_array_equal(moe(x, top_k=2, **kw(dtype)), y)  # the router's routing is route()'s
    np.testing.assert_array_equal(moe(x, **kw(dtype)), y)  # and config.json's top 2 when the call does not say


def test_given_routing_and_experts_without_tokens(ckpt, rng):
    # Only experts 1 and 5 get tokens; weights that do not sum to 1 are used as given.
    moe = ckpt["moe"]
    x, x64 = make_x(rng, 4, "float16")
    ids = np.array([[1, 5], [5, 1], [1, 1], [5, 5]], np.int32)
    w = np.array([[0.7, 0.1], [2.0, -0.5], [0.25, 0.25], [1.0, 0.0]], np.float32)
    y = moe(x, topk_ids=ids, topk_weights=w)
    assert rel_err(y, np_moe(x64, ckpt["experts"], ids, w.astype(np.float64))) <= TOL["float16"]
    # one expert per token (k = 1), given; and a single token routed to one expert of E
    y1 = moe(x, topk_ids=ids[:, :1].copy(), topk_weights=np.ones((4, 1), np.float32))
    assert rel_err(y1, np_moe(x64, ckpt["experts"], ids[:, :1], np.ones((4, 1)))) <= TOL["float16"]


def test_out_threads_and_empty(ckpt, rng):
    moe = ckpt["moe"]
    x, _ = make_x(rng, 7, "float16")
    out = np.full((7, H), np.nan, np.float16)
    assert moe(x, top_k=2, out=out) is out
    # per-slot outputs are reduced in slot order: the same bits for any thread count
    np.testing.assert_array_equal(moe(x, top_k=2, threads=1), out)
    np.testing.assert_array_equal(moe(x, top_k=2, threads=3), out)
    # a non-contiguous x is copied once; the result is the same
    wide = np.zeros((7, 2 * H), np.float16)
    wide[:, ::2] = x
    np.testing.assert_array_equal(moe(wide[:, ::2], top_k=2), out)
    empty = moe(np.zeros((0, H), np.float16), top_k=2)
    assert empty.shape == (0, H)


# ---- rejections: class, argument named, what was expected --------------------------------------


def check(exc_info, cls, arg, fragments=()):
    e = exc_info.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"
    msg = str(e)
    assert msg.startswith(f"{arg}:") or msg.startswith(f"{arg}["), msg
    for f in fragments:
        assert f in msg, msg


def test_rejections(ckpt, rng):
    moe = ckpt["moe"]
    x, _ = make_x(rng, 3, "float16")
    ids, w = moe.route(x, top_k=2)
    cases = [
        (dict(x=x.astype(np.float32)), w4a16.DTypeError, "x", ["float16 or bfloat16", "float32 [3, 128]"]),
        (dict(x=x.view(np.uint16)), w4a16.DTypeError, "x", ["uint16"]),
        (dict(x=np.zeros((3, H + 8), np.float16)), w4a16.ShapeError, "x", ["H = 128", "[3, 136]"]),
        (dict(x=np.zeros((2, 3, H), np.float16)), w4a16.ShapeError, "x", ["[T, H]", "[2, 3, 128]"]),
        (dict(topk_ids=ids.astype(np.int64), topk_weights=w), w4a16.DTypeError, "topk_ids", ["int32", "int64"]),
        (dict(topk_ids=ids, topk_weights=w.astype(np.float64)), w4a16.DTypeError, "topk_weights", ["float32"]),
        (dict(topk_ids=np.zeros((4, 2), np.int32), topk_weights=w), w4a16.ShapeError, "topk_ids", ["T = 3"]),
        (dict(topk_ids=ids[:, 0].copy(), topk_weights=w), w4a16.ShapeError, "topk_ids", ["[T, k]"]),
        (dict(topk_ids=ids, topk_weights=np.ones((3, 3), np.float32)), w4a16.ShapeError, "topk_weights", ["[3, 2]"]),
        (dict(topk_ids=np.zeros((3, E + 1), np.int32), topk_weights=np.ones((3, E + 1), np.float32)),
         w4a16.ShapeError, "topk_ids", [f"E = {E}"]),
        (dict(topk_ids=np.where(ids == ids[1, 1], E, ids).astype(np.int32), topk_weights=w), w4a16.ArgumentError,
         "topk_ids", [f"[0, {E})", f"got {E}"]),
        (dict(topk_ids=np.full((3, 2), -1, np.int32), topk_weights=w), w4a16.ArgumentError, "topk_ids", ["got -1"]),
        (dict(topk_ids=ids), w4a16.ArgumentError, "topk_weights", ["both", "None"]),
        (dict(topk_weights=w), w4a16.ArgumentError, "topk_ids", ["both", "None"]),
        (dict(top_k=0), w4a16.ArgumentError, "top_k", [f"experts = {E}", "got 0"]),
        (dict(top_k=E + 1), w4a16.ArgumentError, "top_k", [f"got {E + 1}"]),
        (dict(out=np.zeros((3, H), np.float32)), w4a16.DTypeError, "out", ["float16"]),
        (dict(out=np.zeros((3, H - 8), np.float16)), w4a16.ShapeError, "out", ["[3, 128]"]),
        (dict(out=np.zeros((3, 2 * H), np.float16)[:, ::2]), w4a16.LayoutError, "out", []),
        (dict(block=8), w4a16.ArgumentError, "block", ["CPU", "got 8"]),
        (dict(threads=-1), w4a16.ArgumentError, "threads", ["got -1"]),
        (dict(x=[[0.0] * H]), w4a16.DTypeError, "x", ["numpy array or a DLPack tensor", "list"]),
        (dict(topk_ids=ids.tolist(), topk_weights=w), w4a16.DTypeError, "topk_ids", ["list"]),
    ]
    for args, cls, arg, fragments in cases:
        call = dict(x=x, top_k=2)
        call.update(args)
        with pytest.raises(w4a16.Error) as e:
            moe(call.pop("x"), **call)
        check(e, cls, arg, fragments)


def test_reference_and_route_rejections(ckpt, rng):
    moe = ckpt["moe"]
    x, _ = make_x(rng, 2, "float16")
    ids, w = moe.route(x, top_k=2)
    with pytest.raises(w4a16.Error) as e:
        moe.reference(x, ids, None)
    check(e, w4a16.ArgumentError, "topk_weights", ["None"])
    with pytest.raises(w4a16.Error) as e:
        moe.reference(x, np.full((2, 2), E, np.int32), w)
    check(e, w4a16.ArgumentError, "topk_ids", [f"got {E}"])
    with pytest.raises(w4a16.Error) as e:
        moe.reference(x.astype(np.float32), ids, w)
    check(e, w4a16.DTypeError, "x", ["float32"])
    with pytest.raises(w4a16.Error) as e:
        moe.route(np.zeros((2, 64), np.float16), top_k=2)
    check(e, w4a16.ShapeError, "x", ["H = 128"])
    with pytest.raises(w4a16.Error) as e:
        moe.route(x.view(np.uint16), top_k=2, dtype="float32")
    check(e, w4a16.ArgumentError, "dtype", ["bfloat16"])


def test_explain_needs_a_cuda_build(ckpt):
    if w4a16.has_cuda:
        assert "block" in ckpt["moe"].explain(64, top_k=2)
    else:
        with pytest.raises(w4a16.UnsupportedError) as e:
            ckpt["moe"].explain(64, top_k=2)
        assert "CUDA build" in str(e.value)


# ---- bfloat16 scales and router ---------------------------------------------------------------


def test_bfloat16_scales_and_router_checkpoint(tmp_path, rng):
    experts, router = write_moe_checkpoint(tmp_path, rng, "gptq", "uint4b8", "bfloat16", layer=2, experts=4,
                                           router_dtype="bfloat16")
    moe = w4a16.load_moe(tmp_path, 2)
    assert (moe.experts, moe.scale_dtype, moe.router_dtype) == (4, "bfloat16", "bfloat16")
    x, x64 = make_x(rng, 6, "bfloat16")
    ids, w = np_route(x64, router, 2)
    y = moe(x, top_k=2, dtype="bfloat16")
    assert rel_err(values(y, "bfloat16"), np_moe(x64, experts, ids, w)) <= TOL["bfloat16"]


# ---- layers built from experts in memory ------------------------------------------------------


def quantized_experts(rng, scalar, scale_dtype, experts=E, group_size=G):
    """E experts as QuantizedLinear (gate, up [I, H], down [H, I]) and their float64 weights."""
    layers, dense = [], []
    for _ in range(experts):
        qs = [w4a16.quantize(0.1 * rng.standard_normal(shape).astype(np.float32), group_size, scalar,
                             scale_dtype=scale_dtype) for shape in ((I, H), (I, H), (H, I))]
        layers.append(qs)
        dense.append(tuple(q.dequantize().astype(np.float64) for q in qs))
    return layers, dense


def stacked(layers):
    """The stacked canonical tensors of MoE.from_canonical: w13 = gate rows then up rows."""
    t = [[q.tensors() for q in ex] for ex in layers]
    w13 = {k: None if t[0][0][k] is None else np.stack([np.concatenate([ex[0][k], ex[1][k]]) for ex in t])
           for k in ("qweight", "scales", "zeros")}
    w2 = {k: None if t[0][2][k] is None else np.stack([ex[2][k] for ex in t]) for k in ("qweight", "scales", "zeros")}
    return w13, w2


@pytest.mark.parametrize("scalar", ["uint4", "uint4b8"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_from_experts_and_from_canonical_match_numpy(rng, scalar, dtype):
    layers, dense = quantized_experts(rng, scalar, dtype)
    router32 = (0.1 * rng.standard_normal((E, H))).astype(np.float32)
    router = router32.astype(np.float16) if dtype == "float16" else w4a16.float32_to_bfloat16_bits(router32)
    router64 = values(router, dtype)
    gate, up, down = zip(*layers)
    moe = w4a16.MoE.from_experts(gate, up, down, router, **kw(dtype))
    assert (moe.hidden, moe.intermediate, moe.experts, moe.group_size) == (H, I, E, G)
    assert (moe.scalar_type, moe.scale_dtype, moe.router_dtype) == (scalar, dtype, dtype)
    w13, w2 = stacked(layers)
    flat = w4a16.MoE.from_canonical(w13["qweight"], w13["scales"], w2["qweight"], w2["scales"], w13["zeros"],
                                    w2["zeros"], group_size=G, router=router, **kw(dtype))
    assert flat.scalar_type == scalar and flat.bytes == moe.bytes
    t = moe.tensors()  # the stacked tensors come back bit for bit, in from_canonical's terms
    for name, a in (("w13", w13), ("w2", w2)):
        for part in ("qweight", "scales", "zeros"):
            if a[part] is None:
                assert t[f"{name}_{part}"] is None
            else:
                np.testing.assert_array_equal(t[f"{name}_{part}"], a[part])
    np.testing.assert_array_equal(t["router"], router)
    x, x64 = make_x(rng, 7, dtype)
    ids, w = np_route(x64, router64, 2)
    ref = np_moe(x64, dense, ids, w)
    y = moe(x, top_k=2, **kw(dtype))
    assert rel_err(values(y, dtype), ref) <= TOL[dtype]
    np.testing.assert_array_equal(flat(x, top_k=2, **kw(dtype)), y)  # the same bytes, the same layer


def test_drop_host_keeps_the_description_and_refuses_what_needs_the_experts(rng):
    layers, dense = quantized_experts(rng, "uint4", "float16", experts=4)
    router = (0.1 * rng.standard_normal((4, H))).astype(np.float16)
    moe = w4a16.MoE.from_experts(*zip(*layers), router)
    x, x64 = make_x(rng, 3, "float16")
    ids, w = moe.route(x, top_k=2)
    y = moe(x, top_k=2)
    before = (moe.hidden, moe.intermediate, moe.experts, moe.group_size, moe.scalar_type, moe.scale_dtype,
              moe.router_dtype, moe.bytes, moe.top_k)
    assert not moe.host_released
    moe.drop_host()
    assert moe.host_released and repr(moe).endswith("host copy released)")
    assert (moe.hidden, moe.intermediate, moe.experts, moe.group_size, moe.scalar_type, moe.scale_dtype,
            moe.router_dtype, moe.bytes, moe.top_k) == before
    np.testing.assert_array_equal(moe.route(x, top_k=2)[0], ids)  # the router stays
    for call in (lambda: moe(x, top_k=2), lambda: moe(x, topk_ids=ids, topk_weights=w), moe.tensors,
                 lambda: moe.reference(x, ids, w)):
        with pytest.raises(w4a16.HostReleasedError) as e:
            call()
        assert "released by drop_host()" in str(e.value) and "prepared before it: none" in str(e.value)
    moe.drop_host()  # nothing left to drop
    assert rel_err(values(y, "float16"), np_moe(x64, dense, ids, w.astype(np.float64))) <= TOL["float16"]


def test_from_experts_without_a_router(rng):
    layers, dense = quantized_experts(rng, "uint4", "float16", experts=4)
    moe = w4a16.MoE.from_experts(*zip(*layers))
    assert moe.router_dtype is None and moe.experts == 4 and moe.tensors()["router"] is None
    assert (moe.top_k, moe.renormalize, moe.routing_from) == (4, True, "default")  # min(8, E)
    x, x64 = make_x(rng, 3, "float16")
    ids = np.array([[3, 0], [1, 3], [2, 2]], np.int32)
    w = np.array([[0.7, 0.3], [0.5, 0.5], [0.4, 0.6]], np.float32)
    y = moe(x, topk_ids=ids, topk_weights=w)
    assert rel_err(values(y, "float16"), np_moe(x64, dense, ids, w.astype(np.float64))) <= TOL["float16"]
    with pytest.raises(w4a16.ArgumentError) as e:
        moe(x, top_k=2)
    assert str(e.value).startswith("topk_ids: expected topk_ids and topk_weights (this layer has no router")
    with pytest.raises(w4a16.ArgumentError) as e:
        moe.route(x, top_k=2)
    assert str(e.value).startswith("router: expected a router [E, H]")


def test_from_experts_rejections(rng):
    layers, _ = quantized_experts(rng, "uint4", "float16", experts=3)
    gate, up, down = (list(v) for v in zip(*layers))
    with pytest.raises(w4a16.ArgumentError) as e:
        w4a16.MoE.from_experts(gate, up[:2], down)
    assert str(e.value).startswith("up: expected 3 layers")
    with pytest.raises(w4a16.ArgumentError) as e:
        w4a16.MoE.from_experts(gate, [up[0], "up1", up[2]], down)
    assert str(e.value).startswith("up[1]: expected a w4a16.QuantizedLinear")
    other_g = w4a16.quantize(rng.standard_normal((I, H)).astype(np.float32), 32, "uint4")
    with pytest.raises(w4a16.ShapeError) as e:
        w4a16.MoE.from_experts(gate, up, down, router=np.zeros((3, H + 8), np.float16))
    assert str(e.value).startswith("gate[0]: expected in_features = the router's hidden size")
    with pytest.raises(w4a16.ShapeError) as e:
        w4a16.MoE.from_experts([gate[0], other_g, gate[2]], up, down)
    assert str(e.value).startswith("expert 1 gate_proj:")
    with pytest.raises(w4a16.ShapeError) as e:
        w4a16.MoE.from_experts(gate, up, down, router=np.zeros((2, H), np.float16))
    assert str(e.value).startswith("router: expected float16 or bfloat16 [E, H] on the host with E = 3")
    w13, w2 = stacked(layers)
    with pytest.raises(w4a16.ArgumentError) as e:  # uint4 stated, the zeros of w2 missing
        w4a16.MoE.from_canonical(w13["qweight"], w13["scales"], w2["qweight"], w2["scales"], w13["zeros"],
                                 group_size=G)
    assert str(e.value).startswith("w2_zeros: expected int32 [E, H/8, G2]")
    with pytest.raises(w4a16.ShapeError) as e:
        w4a16.MoE.from_canonical(w13["qweight"], w13["scales"][:, :, :1], w2["qweight"], w2["scales"], w13["zeros"],
                                 w2["zeros"], group_size=G)
    assert str(e.value).startswith("w13_scales: expected float16 [E, 2I, G13]")


def test_routing_of_another_kind_leaves_the_router_out(tmp_path, rng):
    experts, router = write_moe_checkpoint(tmp_path, rng, "gptq", "uint4b8", "float16", experts=4)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["scoring_func"] = "sigmoid"  # DeepSeek-V3's router: not softmax top-k
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    moe = w4a16.load_moe(tmp_path, 0)
    assert moe.router_dtype is None and 'scoring_func = "sigmoid"' in moe.routing_from
    x, x64 = make_x(rng, 3, "float16")
    with pytest.raises(w4a16.ArgumentError) as e:
        moe(x)
    assert 'scoring_func = "sigmoid"' in str(e.value)
    ids = np.array([[0, 1], [2, 3], [3, 0]], np.int32)
    w = np.array([[0.5, 0.5], [0.9, 0.1], [0.3, 0.7]], np.float32)
    y = moe(x, topk_ids=ids, topk_weights=w)
    assert rel_err(values(y, "float16"), np_moe(x64, experts, ids, w.astype(np.float64))) <= TOL["float16"]


def test_a_shared_expert_is_named_not_included(tmp_path, rng):
    experts, router = write_moe_checkpoint(tmp_path, rng, "awq", "uint4", "float16", experts=4,
                                           extra=("shared_expert.gate_proj", "shared_expert.up_proj",
                                                  "shared_expert.down_proj"))
    moe = w4a16.load_moe(tmp_path, 0)
    assert moe.shared_expert == "model.layers.0.mlp.shared_expert"
    assert repr(moe).endswith("shared expert model.layers.0.mlp.shared_expert not included)")
    x, x64 = make_x(rng, 3, "float16")  # the routed experts alone, as documented
    ids, w = np_route(x64, router, 2)
    assert rel_err(values(moe(x, top_k=2), "float16"), np_moe(x64, experts, ids, w)) <= TOL["float16"]


def test_mixtral_names(tmp_path, rng):
    experts, router = write_moe_checkpoint(tmp_path, rng, "awq", "uint4", "float16", layer=1, experts=4, mixtral=True)
    moe = w4a16.load_moe(tmp_path, 1)
    assert moe.experts == 4
    x, x64 = make_x(rng, 5, "float16")
    ids, w = np_route(x64, router, 2)
    assert rel_err(values(moe(x, top_k=2), "float16"), np_moe(x64, experts, ids, w)) <= TOL["float16"]
    with pytest.raises(w4a16.NotFoundError) as e:
        w4a16.load_moe(tmp_path, 0)
    assert "model.layers.0.mlp.gate.weight" in str(e.value) and "block_sparse_moe.gate.weight" in str(e.value)


# ---- CUDA (a CUDA build, a GPU and torch with CUDA) -------------------------------------------


def cuda_torch():
    """torch when this build and machine can run the CUDA MoE; else the reason it cannot."""
    if not w4a16.has_cuda:
        return None, "this w4a16 build has no CUDA kernels (W4A16_ENABLE_CUDA=OFF)"
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "no CUDA device visible to torch"
    return torch, ""


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_matches_cpu(ckpt, rng, dtype):
    torch, why = cuda_torch()
    if torch is None:
        print(f"skipped: {why}")
        pytest.skip(why)
    moe = w4a16.load_moe(ckpt["dir"], 0)  # a fresh object: prepared starts empty
    tdt = torch.float16 if dtype == "float16" else torch.bfloat16
    for t in (1, 7, 64):
        x32 = torch.from_numpy(rng.standard_normal((t, H)).astype(np.float32))
        x = x32.to(tdt)
        x64 = x.double().numpy()
        ids, w = np_route(x64, ckpt["router"], 2)
        ref = np_moe(x64, ckpt["experts"], ids, w)
        xd = x.cuda()
        y = moe(xd, top_k=2)  # routed on the device (router_logits_cuda, route_cuda), run on the GPU
        assert y.is_cuda and y.dtype == tdt and y.shape == (t, H)
        assert rel_err(y.double().cpu().numpy(), ref) <= TOL[dtype]
        ids_d, w_d = (torch.from_numpy(a).cuda() for a in moe.route(x, top_k=2))
        for block in (0, 1, 8, 16, 32, 64, 128):  # every path, routing given on the device (no sync)
            y = moe(xd, topk_ids=ids_d, topk_weights=w_d, block=block)
            torch.cuda.synchronize()
            assert rel_err(y.double().cpu().numpy(), ref) <= TOL[dtype], f"T={t} block={block}"
    # Routed by the router on the device, the call launches kernels only: it can be captured in a CUDA graph (a copy of
    # x to the host or a wait inside would fail the capture) and its replay equals the eager call.
    x = torch.from_numpy(rng.standard_normal((64, H)).astype(np.float32)).to(tdt).cuda()
    eager = moe(x)  # the largest T first: the workspace and routing buffers are grown before the capture
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        moe(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_graph = moe(x)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y_graph, eager)
    prepared = moe.prepared
    assert len(prepared) == 1 and prepared[0]["dtype"] == dtype and prepared[0]["workspace_bytes"] > 0
    with pytest.raises(w4a16.Error) as e:  # host ids with device x
        moe(xd, topk_ids=ids_d.cpu(), topk_weights=w_d.cpu())
    assert "topk_ids" in str(e.value)
