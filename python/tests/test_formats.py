"""from_awq / from_gptq against the numpy implementation of shared/FORMATS.md."""

import numpy as np
import pytest

import w4a16
from conftest import (awq_pack, canonical_qweight, canonical_zeros, dequant_kn, gptq_qweight, gptq_qzeros,
                      group_of, random_layer)


def test_awq_worked_example_hand_packed():
    # FORMATS.md: the 8 columns of row k holding q = 0..7 pack to 0x75316420.
    k, n, g = 32, 8, 32
    q = np.tile(np.arange(8, dtype=np.uint8), (k, 1))  # [K, N], q[k, n] = n
    qweight = np.full((k, 1), 0x75316420, np.int64).astype(np.int32)
    np.testing.assert_array_equal(awq_pack(q), qweight)  # the test's packer agrees with the spec example
    qzeros = np.array([[0x75316420]], np.int64).astype(np.int32)  # z[n] = n, same interleave
    scales = np.full((1, n), 0.5, np.float16)
    layer = w4a16.from_awq(qweight, qzeros, scales, group_size=g)
    u = layer.unpack()
    np.testing.assert_array_equal(u["q"], q.T)  # canonical q [N, K]: row n holds n everywhere
    np.testing.assert_array_equal(u["z"][:, 0], np.arange(8))
    np.testing.assert_array_equal(layer.dequantize(), np.zeros((n, k), np.float32))  # q == z everywhere
    # canonical words: nibble i of word (n, j) is q[n, 8j + i] = n for every nibble
    want = np.array([int("".join([f"{r:x}"] * 8), 16) for r in range(8)], np.int64).astype(np.int32)
    np.testing.assert_array_equal(layer.tensors()["qweight"], np.repeat(want[:, None], k // 8, axis=1))


@pytest.mark.parametrize("g", [32, 128, -1])
@pytest.mark.parametrize("with_bias", [False, True])
def test_from_awq_matches_spec(rng, g, with_bias):
    n, k = 64, 256
    q, z, s = random_layer(rng, n, k, g)
    bias = rng.standard_normal(n).astype(np.float16) if with_bias else None
    layer = w4a16.from_awq(awq_pack(q), awq_pack(z), s, g, bias)
    assert (layer.n, layer.k, layer.group_size, layer.scalar_type) == (n, k, g, "uint4")
    assert layer.has_bias == with_bias and not layer.act_order
    want = dequant_kn(q, z, s, group_of(k, g))
    np.testing.assert_array_equal(layer.dequantize(), want.astype(np.float32))
    t = layer.tensors()
    np.testing.assert_array_equal(t["qweight"], canonical_qweight(q.T))
    np.testing.assert_array_equal(t["zeros"], canonical_zeros(z.T))
    np.testing.assert_array_equal(t["scales"], s.T)
    # and back: the library's AWQ writer reproduces the checkpoint words
    a = layer.to_awq()
    np.testing.assert_array_equal(a["qweight"], awq_pack(q))
    np.testing.assert_array_equal(a["qzeros"], awq_pack(z))
    np.testing.assert_array_equal(a["scales"], s)


def test_gptq_worked_example_hand_packed():
    # FORMATS.md: K rows 0..7 of one column holding q = 0..7 pack to 0x76543210;
    # a symmetric v1 qzeros word is 0x77777777 (stored z - 1 = 7 for z = 8).
    k, n, g = 32, 8, 32
    q = np.tile(np.arange(8, dtype=np.uint8), k // 8)[:, None].repeat(n, axis=1)  # q[k, n] = k % 8
    qweight = np.full((k // 8, n), 0x76543210, np.int32)
    np.testing.assert_array_equal(gptq_qweight(q), qweight)
    qzeros = np.full((1, 1), 0x77777777, np.int32)
    scales = np.full((1, n), 0.25, np.float16)
    layer = w4a16.from_gptq(qweight, qzeros, scales, np.arange(k, dtype=np.int32) // g, group_size=g, sym=True,
                            desc_act=False)
    assert layer.scalar_type == "uint4b8" and not layer.act_order
    np.testing.assert_array_equal(layer.unpack()["q"], q.T)
    np.testing.assert_array_equal(layer.dequantize(), ((q.T.astype(np.float32) - 8) * 0.25))


@pytest.mark.parametrize("fmt", ["gptq", "gptq_v2"])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("g", [64, 128, -1])
def test_from_gptq_matches_spec(rng, fmt, sym, g):
    n, k = 32, 256
    q, z, s = random_layer(rng, n, k, g, asym=not sym)
    if fmt == "gptq" and not sym:
        z = np.maximum(z, 1)  # a v1 asymmetric zero of 0 cannot be stored (FORMATS.md)
    g_idx = group_of(k, g).astype(np.int32)
    layer = w4a16.from_gptq(gptq_qweight(q), gptq_qzeros(z, fmt), s, g_idx, group_size=g, sym=sym,
                            desc_act=False, checkpoint_format=fmt)
    assert layer.scalar_type == ("uint4b8" if sym else "uint4")
    np.testing.assert_array_equal(layer.dequantize(), dequant_kn(q, z, s, group_of(k, g)).astype(np.float32))
    # the library's GPTQ writer, read back, gives the same layer
    back = layer.to_gptq()
    again = w4a16.from_gptq(back["qweight"], back["qzeros"], back["scales"], back["g_idx"], group_size=g, sym=sym,
                            desc_act=False, checkpoint_format=back["checkpoint_format"])
    np.testing.assert_array_equal(again.dequantize(), layer.dequantize())
    if fmt == "gptq_v2" or sym:
        np.testing.assert_array_equal(back["qweight"], gptq_qweight(q))


@pytest.mark.parametrize("sym", [True, False])
def test_from_gptq_act_order(rng, sym):
    n, k, g = 16, 256, 64
    q, z, s = random_layer(rng, n, k, g, asym=not sym)
    g_idx = rng.permutation(np.arange(k) // g).astype(np.int32)  # each group keeps g channels
    layer = w4a16.from_gptq(gptq_qweight(q), gptq_qzeros(z, "gptq_v2"), s, g_idx, group_size=g, sym=sym,
                            desc_act=True, checkpoint_format="gptq_v2")
    assert layer.act_order
    np.testing.assert_array_equal(layer.dequantize(), dequant_kn(q, z, s, g_idx).astype(np.float32))
    np.testing.assert_array_equal(layer.tensors()["perm"], np.argsort(g_idx, kind="stable").astype(np.int32))


def test_from_gptq_torch_style_int_arrays_from_non_contiguous_views(rng):
    # Checkpoint tensors sliced out of bigger arrays (strided views) are read as they are.
    n, k, g = 16, 128, 32
    q, z, s = random_layer(rng, n, k, g)
    big = np.zeros((k // 8, 2 * n), np.int32)
    big[:, ::2] = gptq_qweight(q)
    view = big[:, ::2]
    assert not view.flags.c_contiguous
    try:
        layer = w4a16.from_gptq(view, gptq_qzeros(z, "gptq_v2"), s, None, group_size=g, sym=False,
                                desc_act=False, checkpoint_format="gptq_v2")
    except w4a16.LayoutError as e:  # a clear refusal is acceptable; it must name the tensor
        assert "qweight" in str(e)
        return
    np.testing.assert_array_equal(layer.dequantize(), dequant_kn(q, z, s, group_of(k, g)).astype(np.float32))


@pytest.mark.parametrize("g", [32, 128])
@pytest.mark.parametrize("scalar", ["uint4", "uint4b8"])
def test_quantize_rtn_error_is_bounded(rng, g, scalar):
    n, k = 32, 256
    w = rng.standard_normal((n, k)).astype(np.float32)
    layer = w4a16.quantize(w, g, scalar)
    assert layer.scalar_type == scalar and layer.scale_dtype == "float16"
    wq = layer.dequantize().astype(np.float64)
    # per group the error is at most half a step (scales are rounded up, never down):
    # step = (max - min) / 15 for uint4, 2 * absmax / 15 for uint4b8 (q - 8 spans -8..7 steps)
    wg = w.reshape(n, -1, g)
    step = (wg.max(-1) - wg.min(-1)) / 15.0 if scalar == "uint4" else 2 * np.abs(wg).max(-1) / 15.0
    err = np.abs(wq - w).reshape(n, -1, g).max(-1)
    assert np.all(err <= 0.502 * step), float((err / step).max())
