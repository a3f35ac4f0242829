"""Every wrong-argument path raises the right exception class, naming the argument, with the
C++ message verbatim (``<arg>: expected ..., got ...``) and the error code's name."""

import numpy as np
import pytest

import w4a16
from conftest import awq_pack, canonical_qweight, random_layer


def check(exc_info, cls, arg, *fragments):
    e = exc_info.value
    classes = cls if isinstance(cls, tuple) else (cls,)
    assert type(e) in classes, f"{type(e).__name__}: {e}"
    assert isinstance(e, w4a16.Error) and isinstance(e, ValueError)
    assert e.code == type(e).code
    msg = str(e)
    assert msg.startswith(arg) or f"{arg}:" in msg or f"{arg} " in msg, msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_exception_hierarchy():
    assert issubclass(w4a16.DTypeError, TypeError) and issubclass(w4a16.DTypeError, w4a16.Error)
    for cls in (w4a16.ArgumentError, w4a16.ShapeError, w4a16.LayoutError, w4a16.UnsupportedError,
                w4a16.FormatError, w4a16.FileError, w4a16.NotFoundError, w4a16.AlignmentError):
        assert issubclass(cls, ValueError) and issubclass(cls, w4a16.Error)
    assert issubclass(w4a16.NotFoundError, LookupError)


@pytest.fixture
def canon(rng):
    n, k, g = 64, 256, 128
    q = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    return dict(n=n, k=k, g=g, qweight=canonical_qweight(q), scales=np.ones((n, k // g), np.float16))


def test_unpacked_float_zero_points_are_refused(canon):
    # FORMATS.md: float zero points [N, G] where packed int32 [N/8, G] are expected: an error.
    zeros = np.full((canon["n"], canon["k"] // canon["g"]), 8, np.float16)
    with pytest.raises(w4a16.Error) as e:
        w4a16.from_canonical(canon["qweight"], canon["scales"], zeros, group_size=canon["g"])
    # the core reports the packed-layout contract (layout_mismatch); a dtype error would do too
    check(e, (w4a16.LayoutError, w4a16.DTypeError), "zeros", "int32", "[8, 2]", "float16 [64, 2]")


def test_unpacked_int32_zero_points_of_the_wrong_shape_are_refused(canon):
    zeros = np.full((canon["n"], canon["k"] // canon["g"]), 8, np.int32)  # [N, G], not [N/8, G]
    with pytest.raises(w4a16.Error) as e:
        w4a16.from_canonical(canon["qweight"], canon["scales"], zeros, group_size=canon["g"])
    check(e, (w4a16.ShapeError, w4a16.LayoutError), "zeros", "[8, 2]", "[64, 2]")


def test_awq_float_qzeros_are_refused(rng):
    q, z, s = random_layer(rng, 16, 128, 64)
    with pytest.raises(w4a16.Error) as e:
        w4a16.from_awq(awq_pack(q), z.astype(np.float16), s, 64)
    check(e, w4a16.DTypeError, "qzeros", "int32")


def test_k_not_a_multiple_of_the_group_size(rng):
    q = rng.integers(0, 16, size=(8, 96), dtype=np.uint8)
    with pytest.raises(w4a16.Error) as e:
        w4a16.pack(q, np.ones((8, 1), np.float16), group_size=64)
    msg = str(e.value)
    assert isinstance(e.value, (w4a16.ShapeError, w4a16.ArgumentError)), msg
    assert "96" in msg and "64" in msg, msg
    with pytest.raises(w4a16.Error) as e:
        w4a16.quantize(rng.standard_normal((8, 96)).astype(np.float32), 64)
    assert isinstance(e.value, (w4a16.ShapeError, w4a16.ArgumentError)) and "96" in str(e.value)


def test_unsupported_group_size(rng):
    with pytest.raises(w4a16.Error) as e:
        w4a16.quantize(rng.standard_normal((8, 96)).astype(np.float32), 48)
    check(e, (w4a16.ArgumentError, w4a16.UnsupportedError), "group_size", "48")


@pytest.fixture
def layer(rng):
    q, z, s = random_layer(rng, 16, 128, 64)
    return w4a16.from_awq(awq_pack(q), awq_pack(z), s, 64)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int8])
def test_x_of_the_wrong_dtype(layer, dt):
    with pytest.raises(w4a16.Error) as e:
        layer(np.ones((2, 128), dt))
    msg = check(e, w4a16.DTypeError, "x", "float16 or bfloat16")
    assert "[2, 128]" in msg


def test_x_uint16_without_dtype_keyword(layer):
    with pytest.raises(w4a16.Error) as e:
        layer(np.ones((2, 128), np.uint16))
    check(e, w4a16.DTypeError, "x", 'dtype="bfloat16"')
    with pytest.raises(w4a16.Error) as e:
        layer(np.ones((2, 128), np.uint16), dtype="float32")
    check(e, w4a16.ArgumentError, "dtype", "float32")


def test_x_not_an_array(layer):
    with pytest.raises(w4a16.DTypeError) as e:
        layer([[1.0] * 128])
    assert str(e.value).startswith("x: expected")


def test_x_of_the_wrong_width(layer):
    with pytest.raises(w4a16.Error) as e:
        layer(np.ones((2, 64), np.float16))
    check(e, w4a16.ShapeError, "x", "K=128", "[2, 64]")


def test_out_of_the_wrong_shape_or_dtype(layer):
    x = np.ones((2, 128), np.float16)
    with pytest.raises(w4a16.Error) as e:
        layer(x, out=np.empty((2, 16), np.float32))
    assert "out" in str(e.value) and isinstance(e.value, (w4a16.DTypeError, w4a16.ShapeError))
    with pytest.raises(w4a16.Error) as e:
        layer(x, out=np.empty((3, 16), np.float16))
    assert "out" in str(e.value) and isinstance(e.value, w4a16.ShapeError), str(e.value)


def test_unknown_backend(layer):
    with pytest.raises(w4a16.NotFoundError) as e:
        layer(np.ones((1, 128), np.float16), backend="no_such_kernel")
    msg = str(e.value)
    assert "no_such_kernel" in msg and "cpu_reference" in msg  # lists the registered names


def test_bad_enumerations(rng):
    q, z, s = random_layer(rng, 16, 128, 64)
    with pytest.raises(w4a16.Error) as e:
        w4a16.quantize(rng.standard_normal((8, 128)).astype(np.float32), 64, "int4")
    check(e, w4a16.ArgumentError, "scalar_type", "int4")
    from conftest import gptq_qweight, gptq_qzeros

    with pytest.raises(w4a16.Error) as e:
        w4a16.from_gptq(gptq_qweight(q), gptq_qzeros(z), s, group_size=64, sym=False, desc_act=False,
                        checkpoint_format="gptq_v3")
    check(e, w4a16.ArgumentError, "checkpoint_format", "gptq_v3")


def test_act_order_without_g_idx(rng):
    from conftest import gptq_qweight, gptq_qzeros

    q, z, s = random_layer(rng, 16, 128, 64, asym=False)
    with pytest.raises(w4a16.Error) as e:
        w4a16.from_gptq(gptq_qweight(q), gptq_qzeros(z), s, None, group_size=64, sym=True, desc_act=True)
    check(e, w4a16.ArgumentError, "g_idx")


def test_missing_checkpoint(tmp_path):
    with pytest.raises(w4a16.Error) as e:
        w4a16.load_linear(tmp_path / "nope", "model.layers.0.mlp.up_proj")
    assert isinstance(e.value, (w4a16.FileError, w4a16.NotFoundError)), str(e.value)
    assert "nope" in str(e.value)
