"""QuantizedLinear.__call__ on the CPU vs a numpy f64 reference computed from the spec."""

import re

import numpy as np
import pytest

import w4a16
from conftest import TOL, awq_pack, dequant_kn, gptq_qweight, gptq_qzeros, group_of, random_layer, rel_err

CPU_KERNELS = [k["name"] for k in w4a16.kernels() if k["device"] == "cpu"]


def make_awq(rng, n, k, g, bias=False):
    q, z, s = random_layer(rng, n, k, g)
    b = rng.standard_normal(n).astype(np.float16) if bias else None
    layer = w4a16.from_awq(awq_pack(q), awq_pack(z), s, g, b)
    w = dequant_kn(q, z, s, group_of(k, g))  # [N, K] f64
    return layer, w, (None if b is None else b.astype(np.float64))


def ref_out(x, w, b):
    y = np.asarray(x, np.float64) @ w.T
    return y if b is None else y + b


def test_kernels_lists_the_cpu_reference():
    ks = w4a16.kernels()
    names = [k["name"] for k in ks]
    assert "cpu_reference" in names and len(names) == len(set(names))
    for k in ks:
        assert set(k) == {"name", "device", "min_capability", "layout", "override_only_reason"}


def test_cuda_archs_says_which_gpus_the_build_serves():
    # "" exactly when the CUDA kernels are not built; otherwise a list of 90a / 80, "+ptx" where the PTX rides along.
    assert (w4a16.cuda_archs == "") == (not w4a16.has_cuda)
    if w4a16.has_cuda:
        archs = w4a16.cuda_archs.removesuffix("+ptx").split(",")
        assert archs and set(archs) <= {"90a", "80"}, w4a16.cuda_archs


def test_cpu_isa_names_what_cpu_fast_runs_and_the_env_caps_it(monkeypatch):
    assert w4a16.cpu_isa() in {"amx", "vnni", "avx2", "scalar"}
    monkeypatch.setenv("W4A16_CPU_ISA", "scalar")
    assert w4a16.cpu_isa() == "scalar"
    monkeypatch.setenv("W4A16_CPU_ISA", "avx2")
    assert w4a16.cpu_isa() in {"avx2", "scalar"}
    monkeypatch.setenv("W4A16_CPU_ISA", "vnni")  # no AMX: the VNNI stream at every M where the CPU has it
    assert w4a16.cpu_isa() in {"vnni", "avx2", "scalar"}
    monkeypatch.setenv("W4A16_CPU_ISA", "sse")
    with pytest.raises(w4a16.ArgumentError, match="W4A16_CPU_ISA"):
        w4a16.cpu_isa()


@pytest.mark.parametrize("backend", CPU_KERNELS)
@pytest.mark.parametrize("m", [1, 3, 16, 33])
@pytest.mark.parametrize("g,bias", [(128, False), (32, True), (-1, False)])
def test_call_fp16_matches_f64_reference(rng, backend, m, g, bias):
    n, k = 72, 256
    layer, w, b = make_awq(rng, n, k, g, bias)
    x = rng.standard_normal((m, k)).astype(np.float16)
    y = layer(x, backend=backend)
    assert isinstance(y, np.ndarray) and y.dtype == np.float16 and y.shape == (m, n)
    assert layer.kernel == backend
    assert rel_err(y, ref_out(x, w, b)) <= TOL["float16"]


@pytest.mark.parametrize("backend", CPU_KERNELS)
def test_call_bf16_bits_from_numpy(rng, backend):
    n, k, g, m = 64, 256, 64, 5
    q, z, s = random_layer(rng, n, k, g, scale_dtype=np.float32)
    s_bits = w4a16.float32_to_bfloat16_bits(s)
    layer = w4a16.from_gptq(gptq_qweight(q), gptq_qzeros(z, "gptq_v2"), s_bits, None, group_size=g, sym=False,
                            desc_act=False, checkpoint_format="gptq_v2", dtype="bfloat16")
    assert layer.scale_dtype == "bfloat16"
    w = dequant_kn(q, z, w4a16.bfloat16_bits_to_float32(s_bits), group_of(k, g))
    xf = rng.standard_normal((m, k)).astype(np.float32)
    xb = w4a16.float32_to_bfloat16_bits(xf)
    y = layer(xb, dtype="bfloat16", backend=backend)
    assert y.dtype == np.uint16 and y.shape == (m, n)  # bfloat16 bits back
    ref = ref_out(w4a16.bfloat16_bits_to_float32(xb), w, None)
    assert rel_err(w4a16.bfloat16_bits_to_float32(y), ref) <= TOL["bfloat16"]


def test_call_act_order_layer(rng):
    n, k, g, m = 32, 256, 64, 4
    q, z, s = random_layer(rng, n, k, g, asym=False)
    g_idx = rng.permutation(np.arange(k) // g).astype(np.int32)
    layer = w4a16.from_gptq(gptq_qweight(q), gptq_qzeros(z), s, g_idx, group_size=g, sym=True, desc_act=True)
    x = rng.standard_normal((m, k)).astype(np.float16)
    for backend in CPU_KERNELS:
        assert rel_err(layer(x, backend=backend), ref_out(x, dequant_kn(q, z, s, g_idx), None)) <= TOL["float16"]


def test_leading_dims_and_vectors(rng):
    layer, w, b = make_awq(rng, 16, 128, 32, bias=True)
    x3 = rng.standard_normal((2, 3, 128)).astype(np.float16)
    y3 = layer(x3)
    assert y3.shape == (2, 3, 16)
    assert rel_err(y3.reshape(6, 16), ref_out(x3.reshape(6, 128), w, b)) <= TOL["float16"]
    x1 = x3[0, 0]
    y1 = layer(x1)
    assert y1.shape == (16,)
    assert rel_err(y1, ref_out(x1[None], w, b)[0]) <= TOL["float16"]


def test_strided_inputs(rng):
    layer, w, b = make_awq(rng, 32, 128, 64)
    wide = rng.standard_normal((5, 200)).astype(np.float16)
    rows = wide[:, :128]  # padded rows: inner stride 1, row stride 200 (no copy needed)
    assert not rows.flags.c_contiguous
    assert rel_err(layer(rows), ref_out(rows, w, b)) <= TOL["float16"]
    every_other = rng.standard_normal((4, 256)).astype(np.float16)[:, ::2]  # inner stride 2
    assert rel_err(layer(every_other), ref_out(every_other, w, b)) <= TOL["float16"]
    transposed = np.ascontiguousarray(rng.standard_normal((128, 3)).astype(np.float16)).T  # column-major
    assert rel_err(layer(transposed), ref_out(transposed, w, b)) <= TOL["float16"]
    backwards = rng.standard_normal((3, 128)).astype(np.float16)[::-1]  # negative row stride
    assert rel_err(layer(backwards), ref_out(backwards, w, b)) <= TOL["float16"]
    broadcast = np.broadcast_to(rng.standard_normal(128).astype(np.float16), (4, 128))  # row stride 0
    assert rel_err(layer(broadcast), ref_out(broadcast, w, b)) <= TOL["float16"]
    # the input is never modified
    before = every_other.copy()
    layer(every_other)
    np.testing.assert_array_equal(every_other, before)


def test_no_rows(rng):
    layer, _, _ = make_awq(rng, 24, 128, 32)
    assert layer(np.zeros((0, 128), np.float16)).shape == (0, 24)
    assert layer(np.zeros((2, 0, 128), np.float16)).shape == (2, 0, 24)


def test_out_buffer_is_written_and_returned(rng):
    layer, w, b = make_awq(rng, 24, 128, 32)
    x = rng.standard_normal((3, 128)).astype(np.float16)
    out = np.full((3, 24), np.nan, np.float16)  # poisoned: every element must be overwritten
    res = layer(x, out=out)
    assert res is out
    assert not np.isnan(out).any()
    assert rel_err(out, ref_out(x, w, b)) <= TOL["float16"]


def test_properties_and_repr(rng):
    layer, _, _ = make_awq(rng, 64, 256, 128, bias=True)
    assert (layer.n, layer.k, layer.group_size, layer.groups) == (64, 256, 128, 2)
    assert layer.scalar_type == "uint4" and layer.scale_dtype == "float16"
    assert layer.bytes == 64 * 256 // 2 + 64 * 2 * 2 + 8 * 2 * 4 + 64 * 2
    assert layer.kernel in CPU_KERNELS  # the registry's default choice, before any call
    assert "N=64" in repr(layer) and "K=256" in repr(layer)


def test_drop_host_keeps_the_properties_and_refuses_what_needs_the_tensors(rng):
    layer, w, b = make_awq(rng, 64, 256, 128, bias=True)
    x = rng.standard_normal((3, 256)).astype(np.float16)
    y = layer(x)
    before = (layer.n, layer.k, layer.group_size, layer.groups, layer.scalar_type, layer.scale_dtype,
              layer.has_bias, layer.act_order, layer.bytes)
    assert layer.linears and all(lin.holds_canonical for lin in layer.linears)  # CPU kernels run on the tensors
    assert not layer.host_released
    layer.drop_host()
    assert layer.host_released and "host copy released" in repr(layer) and "N=64" in repr(layer)
    assert (layer.n, layer.k, layer.group_size, layer.groups, layer.scalar_type, layer.scale_dtype,
            layer.has_bias, layer.act_order, layer.bytes) == before
    assert layer.linears == []  # CPU bindings go with the tensors they read
    for call in (lambda: layer(x), layer.tensors, layer.unpack, layer.dequantize, layer.to_awq, layer.to_gptq,
                 layer.explain, lambda: w4a16.explain(layer), lambda: layer.kernel,
                 lambda: w4a16.MoE.from_experts([layer], [layer], [layer])):
        with pytest.raises(w4a16.HostReleasedError) as e:
            call()
        assert "released by drop_host()" in str(e.value)
    assert isinstance(e.value, w4a16.UnsupportedError)  # callers that catch the broader class still do
    layer.drop_host()  # a second time: nothing left to drop
    assert rel_err(y, ref_out(x, w, b)) <= TOL["float16"]


def test_layout_arrays_of_the_cuda_kernels(rng):
    """The tc layout's host arrays (what w4a16.torch.W4A16PreparedLinear keeps on the GPU): names, dtypes, shapes
    with N and K padded to 64, scales in the asked dtype (bfloat16 as uint16 bits) with padded rows 0, and the
    refusals: a kernel whose layout only lives inside it, an unknown name, a build without the CUDA kernels."""
    layer, _, _ = make_awq(rng, 40, 256, 64, bias=True)
    if not w4a16.has_cuda:
        with pytest.raises(w4a16.NotFoundError) as e:
            layer.layout_arrays()
        assert 'kernel: expected a registered kernel name (w4a16.kernels()), got "cuda_hybrid"' in str(e.value)
        return
    tag, a = layer.layout_arrays("bfloat16")
    assert tag == "cuda.tc16x64.v1" and list(a) == ["qweight", "scales", "zeros", "bias"]
    assert (a["qweight"].dtype, a["qweight"].shape) == (np.int32, (4, 4, 32, 4))
    assert (a["scales"].dtype, a["scales"].shape) == (np.uint16, (4, 64))
    assert (a["zeros"].dtype, a["zeros"].shape) == (np.uint8, (4, 4, 8)) and a["bias"].shape == (40,)
    s = w4a16.bfloat16_bits_to_float32(a["scales"])
    src = layer.tensors()["scales"].astype(np.float32)  # [N, G] fp16
    n = np.arange(40)
    np.testing.assert_allclose(s[:, n // 16 * 16 + 2 * (n % 8) + n % 16 // 8], src.T, rtol=2 ** -8)
    assert not s[:, [n2 // 16 * 16 + 2 * (n2 % 8) + n2 % 16 // 8 for n2 in range(40, 64)]].any()
    for kernel, err in (("cpu_fast", w4a16.UnsupportedError), ("nope", w4a16.NotFoundError)):
        with pytest.raises(err):
            layer.layout_arrays(kernel=kernel)


def test_adopt_reads_the_arrays_by_name_on_every_build():
    """_core.adopt_linear (what w4a16.torch's prepared modules call) reads its {name: array} dict before anything
    else: on the CPU the arrays are read and the kernel chosen there refuses the tc layout by name (a layout error, not
    a cast failure: stop 46 found std::bad_cast here, the key caster missing from the reading's translation unit); a
    value that is no array and a key that is no str are refused by name."""
    q = np.zeros((4, 4, 32, 4), np.int32)
    s = np.zeros((2, 64), np.float16)
    args = (64, 256, 128, "uint4b8", "float16", "cpu", 0, "", 16, 0, False, False)
    with pytest.raises(w4a16.LayoutError) as e:
        w4a16._core.adopt_linear("cuda.tc16x64.v1", {"qweight": q, "scales": s}, *args)
    assert "layout: expected the layout of the kernel chosen for N=64 K=256" in str(e.value)
    assert "got cuda.tc16x64.v1" in str(e.value)
    with pytest.raises(w4a16.ArgumentError) as e:
        w4a16._core.adopt_linear("cuda.tc16x64.v1", {"qweight": q, "scales": "not an array"}, *args)
    assert "scales: expected an array (numpy, a DLPack capsule not yet consumed" in str(e.value)
    assert "got an object of type str" in str(e.value)
    with pytest.raises(w4a16.ArgumentError) as e:
        w4a16._core.adopt_linear("cuda.tc16x64.v1", {1: q}, *args)
    assert "arrays: expected a dict keyed by the layout's array names (str), got a key of type int" in str(e.value)


def test_call_with_the_callers_workspace(rng):
    """workspace=: a binding with no workspace of its own (own_workspace False, its own key beside the default one),
    asked per call for what it needs (the CPU kernels: nothing), the same outputs."""
    layer, w, b = make_awq(rng, 64, 256, 128, bias=True)
    x = rng.standard_normal((5, 256)).astype(np.float16)
    asked = []
    y = layer(x, workspace=lambda nbytes: asked.append(nbytes) or (0, 0))
    assert asked == [0] and rel_err(y, ref_out(x, w, b)) <= TOL["float16"]
    np.testing.assert_array_equal(y, layer(x))
    assert sorted(lin.owns_workspace for lin in layer.linears) == [False, True]
    assert all(lin.workspace_for(5) == 0 for lin in layer.linears)


def test_many_rows_grow_the_workspace(rng):
    layer, w, b = make_awq(rng, 8, 64, 32)
    x = rng.standard_normal((4097, 64)).astype(np.float16)
    assert rel_err(layer(x), ref_out(x, w, b)) <= TOL["float16"]


def test_explain_for_a_layer_and_for_a_config(rng):
    layer, _, _ = make_awq(rng, 64, 256, 128)
    text = layer.explain()
    assert layer.kernel in text and "N=64" in text and "K=256" in text
    forced = layer.explain(backend="cpu_reference")
    assert "cpu_reference" in forced
    d = w4a16.choose(n=4096, k=4096, group_size=128, scalar_type="uint4b8")
    assert d["chosen"] in CPU_KERNELS and d["text"]
    assert all(isinstance(r, tuple) and len(r) == 2 for r in d["refused"])
    # nothing fits on a CUDA device in a CPU-only build, or the CUDA kernels refuse g=48
    with pytest.raises(w4a16.Error) as e:
        w4a16.explain(n=64, k=96, group_size=48, device="cuda")
    assert "48" in str(e.value) or "cuda" in str(e.value)


def test_explain_with_token_counts_says_how_each_runs(rng):
    layer, _, _ = make_awq(rng, 64, 256, 128)
    text = layer.explain(ms=[1, 64])
    assert text.startswith(layer.explain())  # the decision first, unchanged
    assert f"how {layer.kernel} runs M tokens:" in text
    assert re.search(r"  M=1: (scalar|avx2|vnni): ", text) and re.search(r"  M=64: (scalar|avx2|vnni|amx): ", text)  # cpu_fast
    d = w4a16.choose(n=4096, k=4096, ms=[1, 4096])
    assert [m for m, _ in d["runs"]] == [1, 4096]
    with pytest.raises(w4a16.Error) as e:
        w4a16.explain(n=4096, k=4096, ms=[0])
    assert "ms" in str(e.value)


class _DLPackOnly:
    """A producer known only through the DLPack protocol (not numpy, torch or cupy)."""

    def __init__(self, a):
        self._a = a  # no shape attribute: everything the layer needs comes through DLPack

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_any_dlpack_producer_on_the_cpu(rng):
    layer, w, b = make_awq(rng, 16, 128, 64)
    x = rng.standard_normal((3, 128)).astype(np.float16)
    y = layer(_DLPackOnly(x))
    assert isinstance(y, np.ndarray) and y.dtype == np.float16 and y.shape == (3, 16)
    assert rel_err(y, ref_out(x, w, b)) <= TOL["float16"]


def test_gptq_float_qzeros_are_refused(rng):
    q, z, s = random_layer(rng, 16, 128, 64)
    with pytest.raises(w4a16.Error) as e:  # unpacked float zero points [G, N] where int32 [G, N/8] are expected
        w4a16.from_gptq(gptq_qweight(q), z.astype(np.float16), s, None, group_size=64, sym=False, desc_act=False)
    assert isinstance(e.value, (w4a16.DTypeError, w4a16.LayoutError)) and str(e.value).startswith("qzeros")


@pytest.mark.parametrize("backend", CPU_KERNELS)
def test_fp16_scales_with_bf16_activations(rng, backend):
    layer, w, b = make_awq(rng, 32, 256, 64, bias=True)  # float16 scales and bias
    xb = w4a16.float32_to_bfloat16_bits(rng.standard_normal((3, 256)).astype(np.float32))
    y = layer(xb, dtype="bfloat16", backend=backend)
    assert y.dtype == np.uint16
    ref = ref_out(w4a16.bfloat16_bits_to_float32(xb), w, b)
    assert rel_err(w4a16.bfloat16_bits_to_float32(y), ref) <= TOL["bfloat16"]
