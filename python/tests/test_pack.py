"""pack / unpack: canonical <-> one uint8 per 4-bit value, bit for bit."""

import numpy as np
import pytest

import w4a16
from conftest import canonical_qweight, canonical_zeros


@pytest.mark.parametrize("g", [32, 64, 128, 256, -1])
@pytest.mark.parametrize("scalar", ["uint4", "uint4b8"])
def test_pack_matches_spec_and_round_trips(rng, g, scalar):
    n, k = 24, 512
    groups = 1 if g == -1 else k // g
    q = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    z = rng.integers(0, 16, size=(n, groups), dtype=np.uint8) if scalar == "uint4" else None
    s = rng.uniform(0.001, 0.1, size=(n, groups)).astype(np.float16)
    layer = w4a16.pack(q, s, z, group_size=g, scalar_type=scalar)
    assert (layer.n, layer.k, layer.group_size, layer.scalar_type) == (n, k, g, scalar)
    t = layer.tensors()
    # The canonical words equal the spec's packing, computed independently.
    np.testing.assert_array_equal(t["qweight"], canonical_qweight(q))
    if z is not None:
        np.testing.assert_array_equal(t["zeros"], canonical_zeros(z))
    else:
        assert t["zeros"] is None
    np.testing.assert_array_equal(t["scales"], s)
    u = w4a16.unpack(layer)
    np.testing.assert_array_equal(u["q"], q)
    if z is not None:
        np.testing.assert_array_equal(u["z"], z)
    else:
        assert u["z"] is None
    np.testing.assert_array_equal(u["scales"], s)
    assert u["bias"] is None and u["perm"] is None
    # bytes: qweight + scales + zeros
    assert layer.bytes == n * k // 2 + s.nbytes + (n * groups // 2 if z is not None else 0)


def test_canonical_round_trip_bits(rng):
    n, k, g = 16, 256, 64
    qw = rng.integers(-(2**31), 2**31, size=(n, k // 8), dtype=np.int64).astype(np.int32)
    zs = rng.integers(-(2**31), 2**31, size=(n // 8, k // g), dtype=np.int64).astype(np.int32)
    s = rng.uniform(0.01, 1, size=(n, k // g)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float16)
    layer = w4a16.from_canonical(qw, s, zs, bias, group_size=g)
    assert layer.scalar_type == "uint4" and layer.has_bias
    t = layer.tensors()
    np.testing.assert_array_equal(t["qweight"], qw)
    np.testing.assert_array_equal(t["zeros"], zs)
    np.testing.assert_array_equal(t["bias"], bias)
    again = w4a16.pack(**{k_: v for k_, v in w4a16.unpack(layer).items() if k_ in ("q", "z", "scales", "bias")},
                       group_size=g)
    np.testing.assert_array_equal(again.tensors()["qweight"], qw)
    np.testing.assert_array_equal(again.tensors()["zeros"], zs)


def test_pack_with_perm_and_bf16_scales(rng):
    n, k, g = 8, 128, 32
    q = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    s_f32 = rng.uniform(0.001, 0.1, size=(n, k // g)).astype(np.float32)
    s_bits = w4a16.float32_to_bfloat16_bits(s_f32)
    perm = rng.permutation(k).astype(np.int32)
    layer = w4a16.pack(q, s_bits, perm=perm, group_size=g, dtype="bfloat16")
    assert layer.scale_dtype == "bfloat16" and layer.act_order and layer.scalar_type == "uint4b8"
    u = layer.unpack()
    np.testing.assert_array_equal(u["q"], q)
    np.testing.assert_array_equal(u["scales"], s_bits)
    np.testing.assert_array_equal(u["perm"], perm)
    # dequantize returns the original channel order: w_orig[n, perm[k']] = w_canonical(n, k')
    s = w4a16.bfloat16_bits_to_float32(s_bits).astype(np.float64)
    wc = (q.astype(np.float64) - 8) * np.repeat(s, g, axis=1)
    w = np.empty_like(wc)
    w[:, perm] = wc
    np.testing.assert_array_equal(layer.dequantize(), w.astype(np.float32))


def test_bfloat16_bit_helpers(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    b = w4a16.float32_to_bfloat16_bits(x)
    back = w4a16.bfloat16_bits_to_float32(b)
    assert np.max(np.abs(back - x) / np.abs(x)) <= 2.0**-8
    # exactly representable values survive; ties round to even
    np.testing.assert_array_equal(w4a16.float32_to_bfloat16_bits(np.array([1.0, -2.0, 0.0], np.float32)),
                                  np.array([0x3F80, 0xC000, 0x0000], np.uint16))
    tie = np.array([0x3F808000], np.uint32).view(np.float32)  # halfway between 0x3F80 and 0x3F81
    assert w4a16.float32_to_bfloat16_bits(tie)[0] == 0x3F80


@pytest.mark.parametrize("bad", [16, 255])
def test_pack_rejects_values_out_of_range(rng, bad):
    q = rng.integers(0, 16, size=(8, 64), dtype=np.uint8)
    q[3, 5] = bad
    s = np.ones((8, 2), np.float16)
    with pytest.raises(w4a16.Error) as e:
        w4a16.pack(q, s, group_size=32)
    assert "q" in str(e.value)
