"""load_linear on checkpoint folders: one written by the library's own safetensors writer
(w4a16.save_safetensors), one written by plain numpy (conftest.write_safetensors_numpy)."""

import json

import numpy as np
import pytest

import w4a16
from conftest import (TOL, awq_pack, dequant_kn, gptq_qweight, gptq_qzeros, group_of, random_layer, rel_err,
                      write_safetensors_numpy)

PREFIX = "model.layers.0.mlp.up_proj"


def write_config(d, qcfg):
    (d / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                                               "quantization_config": qcfg}))


@pytest.mark.parametrize("writer", ["w4a16", "numpy"])
def test_load_awq_checkpoint(tmp_path, rng, writer):
    n, k, g = 64, 256, 128
    q, z, s = random_layer(rng, n, k, g)
    bias = rng.standard_normal(n).astype(np.float16)
    tensors = {f"{PREFIX}.qweight": awq_pack(q), f"{PREFIX}.qzeros": awq_pack(z), f"{PREFIX}.scales": s,
               f"{PREFIX}.bias": bias, "lm_head.weight": rng.standard_normal((16, k)).astype(np.float16)}
    if writer == "w4a16":
        w4a16.save_safetensors(tmp_path / "model.safetensors", tensors, {"format": "pt"})
    else:
        write_safetensors_numpy(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": g, "zero_point": True,
                            "version": "gemm", "modules_to_not_convert": None})
    layer = w4a16.load_linear(tmp_path, PREFIX)
    assert (layer.n, layer.k, layer.group_size, layer.scalar_type, layer.has_bias) == (n, k, g, "uint4", True)
    w = dequant_kn(q, z, s, group_of(k, g))
    np.testing.assert_array_equal(layer.dequantize(), w.astype(np.float32))
    x = rng.standard_normal((4, k)).astype(np.float16)
    ref = x.astype(np.float64) @ w.T + bias.astype(np.float64)
    assert rel_err(layer(x, backend="cpu_reference"), ref) <= TOL["float16"]

    ck = w4a16.open_checkpoint(tmp_path)
    assert ck.quantization_config["quant_method"] == "awq"
    layers = {l["prefix"]: l for l in ck.quantized_layers}
    assert set(layers) == {PREFIX}
    info = layers[PREFIX]
    assert (info["format"], info["n"], info["k"], info["group_size"], info["has_bias"]) == ("awq", n, k, g, True)
    assert "lm_head" in ck.unquantized_linears
    with pytest.raises(w4a16.NotFoundError) as e:
        ck.load_linear("model.layers.0.mlp.down_proj")
    assert "model.layers.0.mlp.down_proj" in str(e.value)


def test_load_gptq_act_order_checkpoint(tmp_path, rng):
    n, k, g = 32, 256, 64
    q, z, s = random_layer(rng, n, k, g, asym=False)
    g_idx = rng.permutation(np.arange(k) // g).astype(np.int32)
    w4a16.save_safetensors(tmp_path / "model.safetensors", {
        f"{PREFIX}.qweight": gptq_qweight(q), f"{PREFIX}.qzeros": gptq_qzeros(z, "gptq"),
        f"{PREFIX}.scales": s, f"{PREFIX}.g_idx": g_idx})
    write_config(tmp_path, {"quant_method": "gptq", "bits": 4, "group_size": g, "sym": True, "desc_act": True,
                            "checkpoint_format": "gptq", "damp_percent": 0.01})
    layer = w4a16.load_linear(tmp_path, PREFIX)
    assert layer.act_order and layer.scalar_type == "uint4b8"
    np.testing.assert_array_equal(layer.dequantize(), dequant_kn(q, z, s, g_idx).astype(np.float32))


def test_round_trip_through_the_library_writers(tmp_path, rng):
    # quantize -> to_gptq -> save_safetensors -> load_linear gives back the same layer
    w = rng.standard_normal((48, 128)).astype(np.float32)
    layer = w4a16.quantize(w, 64, "uint4")
    t = layer.to_gptq()
    assert t["checkpoint_format"] == "gptq_v2"  # v1 cannot store an asymmetric zero of 0
    w4a16.save_safetensors(tmp_path / "model.safetensors",
                           {f"{PREFIX}.{name}": t[name] for name in ("qweight", "qzeros", "scales", "g_idx")
                            if t[name] is not None})
    write_config(tmp_path, {"quant_method": "gptq", "bits": 4, "group_size": 64, "sym": False,
                            "desc_act": False, "checkpoint_format": t["checkpoint_format"]})
    again = w4a16.load_linear(tmp_path, PREFIX)
    for name in ("qweight", "zeros", "scales"):
        np.testing.assert_array_equal(again.tensors()[name], layer.tensors()[name])


def test_safetensors_read_back_and_bf16_tag(tmp_path, rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    bits = w4a16.float32_to_bfloat16_bits(a)
    w4a16.save_safetensors(tmp_path / "t.safetensors", {"b": bits}, {"k": "v"}, dtype="bfloat16")
    tensors, meta, tags = w4a16.load_safetensors(tmp_path / "t.safetensors")
    assert meta == {"k": "v"} and tags == {"b": "BF16"}
    np.testing.assert_array_equal(tensors["b"], bits)
    assert not tensors["b"].flags.writeable  # a view of the read-only mapping


def test_corrupt_safetensors_is_a_format_error(tmp_path):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\xff" * 16)
    with pytest.raises(w4a16.FormatError) as e:
        w4a16.load_safetensors(p)
    assert "bad.safetensors" in str(e.value) or "header" in str(e.value)


@pytest.mark.parametrize("fmt,scalar", [("awq", "uint4"), ("gptq", "uint4"), ("gptq", "uint4b8")])
@pytest.mark.parametrize("shard_bytes", [0, 4096])
def test_save_checkpoint_with_the_library_writer(tmp_path, rng, fmt, scalar, shard_bytes):
    prefixes = [f"model.layers.{i}.mlp.{p}" for i in range(2) for p in ("gate_proj", "up_proj")]
    layers = {p: w4a16.quantize(rng.standard_normal((64, 256)).astype(np.float32), 128, scalar) for p in prefixes}
    head = rng.standard_normal((32, 256)).astype(np.float16)
    w4a16.save_checkpoint(tmp_path, layers, format=fmt, dense={"lm_head.weight": head}, shard_bytes=shard_bytes,
                          config={"model_type": "qwen2", "hidden_size": 256})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["model_type"] == "qwen2" and cfg["quantization_config"]["quant_method"] == fmt
    assert (tmp_path / "model.safetensors.index.json").exists() == (shard_bytes > 0)
    ck = w4a16.open_checkpoint(tmp_path)
    assert sorted(l["prefix"] for l in ck.quantized_layers) == sorted(prefixes)
    assert "lm_head" in ck.unquantized_linears
    for p, layer in layers.items():
        back = ck.load_linear(p)
        assert back.scalar_type == scalar
        for name in ("qweight", "zeros", "scales"):
            a, b = back.tensors()[name], layer.tensors()[name]
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)


def test_save_checkpoint_dense_bfloat16(tmp_path, rng):
    """dense uint16 arrays with dtype="bfloat16" are stored as BF16 (bits unchanged); without the keyword a
    uint16 array is refused (numpy has no bfloat16: the bits need the keyword)."""
    layer = w4a16.quantize(rng.standard_normal((64, 256)).astype(np.float32), 128, "uint4")
    bits = w4a16.float32_to_bfloat16_bits(rng.standard_normal((32, 256)).astype(np.float32))
    w4a16.save_checkpoint(tmp_path, {"model.layers.0.mlp.up_proj": layer}, format="gptq",
                          dense={"lm_head.weight": bits}, dtype="bfloat16")
    tensors, _, tags = w4a16.load_safetensors(tmp_path / "model.safetensors")
    assert tags["lm_head.weight"] == "BF16"
    np.testing.assert_array_equal(tensors["lm_head.weight"], bits)
    with pytest.raises(w4a16.DTypeError) as e:
        w4a16.save_checkpoint(tmp_path / "no_keyword", {"model.layers.0.mlp.up_proj": layer}, format="gptq",
                              dense={"lm_head.weight": bits})
    assert "lm_head.weight" in str(e.value)
