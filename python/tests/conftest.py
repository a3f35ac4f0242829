"""Shared fixtures and an independent numpy implementation of shared/FORMATS.md.

The packers below are written from the spec text, not from the library: they are the
oracle that the bindings' converters are checked against (bit for bit where the math is
exact), together with hand-packed words such as the AWQ worked example 0x75316420.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i of an AWQ word holds column 8j + AWQ_ORDER[i]

# Named tolerances: relative error ||y - ref|| / ||ref|| against an f64 reference.
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.fixture
def rng():
    # Fresh random inputs on every run; the seed is printed so a failure can be replayed.
    seed = np.random.SeedSequence().entropy
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


# ---- packing, straight from FORMATS.md ------------------------------------------------------


def pack_last(v) -> np.ndarray:
    """[..., 8m] values 0..15 -> int32 [..., m]: nibble i of word j = v[..., 8j + i]."""
    v = np.asarray(v).astype(np.uint32)
    v = v.reshape(*v.shape[:-1], v.shape[-1] // 8, 8)
    w = np.zeros(v.shape[:-1], np.uint32)
    for i in range(8):
        w |= v[..., i] << np.uint32(4 * i)
    return w.view(np.int32)


def canonical_qweight(q_nk) -> np.ndarray:
    """canonical qweight int32 [N, K/8]: nibble i of word (n, j) is q[n, 8j + i]."""
    return pack_last(q_nk)


def canonical_zeros(z_ng) -> np.ndarray:
    """canonical zeros int32 [N/8, G]: nibble i of word (r, g) is z[8r + i, g]."""
    return np.ascontiguousarray(pack_last(np.asarray(z_ng).T).T)


def awq_pack(v_kn) -> np.ndarray:
    """AWQ qweight/qzeros int32 [R, N/8] from values [R, N]: nibble i of word (r, j) holds column 8j + ORDER[i]."""
    v = np.asarray(v_kn)
    r, n = v.shape
    return pack_last(v.reshape(r, n // 8, 8)[:, :, AWQ_ORDER].reshape(r, n))


def gptq_qweight(q_kn) -> np.ndarray:
    """GPTQ qweight int32 [K/8, N]: nibble i of word (r, n) is q[8r + i, n]."""
    return np.ascontiguousarray(pack_last(np.asarray(q_kn).T).T)


def gptq_qzeros(z_gn, checkpoint_format="gptq") -> np.ndarray:
    """GPTQ qzeros int32 [G, N/8], no interleave; v1 ("gptq") stores z - 1 mod 16."""
    z = np.asarray(z_gn).astype(np.int64)
    stored = (z - 1) & 15 if checkpoint_format == "gptq" else z
    return pack_last(stored)


def dequant_kn(q_kn, z_gn, s_gn, group_of_k) -> np.ndarray:
    """W [N, K] float64 from per-(k, n) values: w[k, n] = (q[k, n] - z[g(k), n]) * s[g(k), n]."""
    z = np.asarray(z_gn, np.float64)[group_of_k]  # [K, N]
    s = np.asarray(s_gn, np.float64)[group_of_k]
    return ((np.asarray(q_kn, np.float64) - z) * s).T


def random_layer(rng, n, k, g, *, asym=True, scale_dtype=np.float16):
    """Random q [K, N], z [G, N], s [G, N] (a layer in the checkpoint orientation)."""
    groups = 1 if g == -1 else k // g
    q = rng.integers(0, 16, size=(k, n), dtype=np.uint8)
    z = rng.integers(0, 16, size=(groups, n), dtype=np.uint8) if asym else np.full((groups, n), 8, np.uint8)
    s = (rng.uniform(0.002, 0.02, size=(groups, n))).astype(scale_dtype)
    return q, z, s


def group_of(k, g):
    return np.zeros(k, np.int64) if g == -1 else np.arange(k) // g


def rel_err(y, ref) -> float:
    y = np.asarray(y, np.float64)
    return float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30))


# ---- a safetensors writer in plain numpy (independent of the library's writer) ------------

_ST_TAG = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int32): "I32",
           np.dtype(np.uint8): "U8", np.dtype(np.int64): "I64"}


def write_safetensors_numpy(path, tensors: dict, bf16: tuple = ()):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        tag = "BF16" if name in bf16 else _ST_TAG[a.dtype]
        b = a.tobytes()
        header[name] = {"dtype": tag, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def np_moe(x64, experts, ids, weights) -> np.ndarray:
    """The MoE layer in float64: y[t] = sum_j weights[t, j] * down(silu(gate(x[t])) * up(x[t])) over the experts
    (gate, up, down) = experts[ids[t, j]], each a float64 [out, in] matrix."""
    y = np.zeros((x64.shape[0], experts[0][2].shape[0]))
    for t in range(x64.shape[0]):
        for e, w in zip(ids[t], weights[t]):
            gate, up, down = experts[e]
            g, u = gate @ x64[t], up @ x64[t]
            y[t] += w * (down @ (g / (1 + np.exp(-g)) * u))
    return y
