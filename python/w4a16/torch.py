"""w4a16.torch: PyTorch custom ops and an nn.Module over the w4a16 kernels.

Ops (schemas declared once below; CPU and CUDA kernels call the extension; fake kernels give
torch.compile / FakeTensor the output shapes without running anything):

  torch.ops.w4a16.prepare(qweight, qzeros, scales, g_idx, format, group_size, sym=True,
                          desc_act=False, checkpoint_format="gptq")
      -> (qweight [N, K/8] int32, scales [N, G], zeros [N/8, G] int32 or [0], perm [K] int32 or [0])
      An AWQ ("awq") or GPTQ ("gptq") layer converted to the canonical layout, on the input's
      device. Absent outputs are empty tensors (a custom op returns no optional tensors): zeros
      for uint4b8 (GPTQ sym), perm for AWQ or a GPTQ layer given without g_idx. With g_idx the
      perm is always [K] (the identity when g_idx is k / g), so shapes never depend on values.

  torch.ops.w4a16.gemm(x, qweight, scales, zeros, bias, perm, group_size, scalar_type, backend="")
      -> y [..., N] = x [..., K] . W^T (+ bias), x float16 or bfloat16, on x's device and current
      stream. zeros / bias / perm may be None or empty. The kernel's own weight layout is
      prepared once per (weights, device, dtype, backend) and cached; the cache entry goes away
      with the qweight tensor, and a changed tensor version (in-place update) rebuilds it.

  torch.ops.w4a16.moe(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales,
                      w2_zeros, group_size, scalar_type)
      -> y [T, H]: y[t] = sum_j topk_weights[t, j] * down_e(silu(gate_e(x[t])) * up_e(x[t])), e = topk_ids[t, j];
      the fused mixture-of-experts layer, routing given (as an engine routes on its own). x [T, H] float16 or
      bfloat16; topk_ids int32 or int64 [T, k] and topk_weights float32 [T, k] on x's device; the experts'
      stacked canonical tensors of w4a16.MoE.from_canonical (w13 = gate rows then up rows: w13_qweight int32
      [E, 2I, H/8], w13_scales [E, 2I, G], w2_qweight int32 [E, H, I/8], w2_scales [E, H, G], zeros int32
      [E, 2I/8, G] / [E, H/8, G] for "uint4", None or empty for "uint4b8"). Built and prepared once per weights
      and cached, as for gemm.

  torch.ops.w4a16.gemm_tc(x, qweight, scales, zeros, bias, perm, n, k, group_size, scalar_type, backend="")
      -> y [..., N], as gemm, on weights already in the CUDA kernels' prepared layout "cuda.tc16x64.v1"
      (QuantizedLinear.layout_arrays: qweight int32 [N_pad/16, K_pad/64, 32, 4], scales [G, N_pad] in x's dtype,
      zeros uint8 [G, N_pad/16, 8] for "uint4", bias [N], perm int32 [K]), read in place on x's device: no copy
      is made or cached, so the GPU holds the weights once; the kernels' workspace is one buffer per device and
      stream, shared by every call (release_workspaces() frees it). CUDA only.

  torch.ops.w4a16.moe_tc(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales,
                         w2_zeros, group_size, scalar_type)
      -> y [T, H], as moe, on experts already in the CUDA layer's stacked layout "cuda.moe.tc16x64.v1"
      (MoE.layout_arrays: w13_qweight int32 [E, 2I/16, H/64, 128], w13_scales [E, G, 2I] in x's dtype, w13_zeros
      uint8 [E, G, I] for "uint4", w2 likewise over [H, I]), read in place: the GPU holds the experts once. CUDA only.

W4A16Linear(nn.Module) holds the canonical tensors as buffers and calls w4a16::gemm; build it
from an AWQ/GPTQ layer (tensors or a checkpoint folder + prefix) or from a float nn.Linear.
W4A16PreparedLinear(nn.Module) holds only the prepared layout (one GPU copy of the weights) and calls
w4a16::gemm_tc, W4A16PreparedMoE likewise the MoE layer's and w4a16::moe_tc; prepare_modules(model) swaps a
model's CUDA W4A16Linear / W4A16MoE modules for them.
W4A16MoE(nn.Module) holds the stacked experts (and the router) as buffers and calls w4a16::moe.
"""

from __future__ import annotations

import weakref
from typing import Optional

import numpy as np
import torch

from . import _arrays, _core
from .errors import ArgumentError, DTypeError, HostReleasedError, ShapeError, UnsupportedError, fail
from .linear import SHARED_MAX_M, QuantizedLinear, _round_m, load_linear
from .moe import MoE

__all__ = ["W4A16Linear", "W4A16MoE", "W4A16PreparedLinear", "W4A16PreparedMoE", "gemm", "gemm_tc", "moe", "prepare",
           "prepare_modules", "release_workspaces", "to_torch"]

_PREPARE_SCHEMA = (
    "prepare(Tensor qweight, Tensor? qzeros, Tensor scales, Tensor? g_idx, str format, int group_size, "
    'bool sym=True, bool desc_act=False, str checkpoint_format="gptq") -> (Tensor, Tensor, Tensor, Tensor)'
)
_GEMM_SCHEMA = (
    "gemm(Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, Tensor? perm, int group_size, "
    'str scalar_type, str backend="") -> Tensor'
)
_GEMM_TC_SCHEMA = (
    "gemm_tc(Tensor x, Tensor qweight, Tensor scales, Tensor? zeros, Tensor? bias, Tensor? perm, int n, int k, "
    'int group_size, str scalar_type, str backend="") -> Tensor'
)
_TC_LAYOUT = "cuda.tc16x64.v1"
_MOE_TC_SCHEMA = (
    "moe_tc(Tensor x, Tensor topk_ids, Tensor topk_weights, Tensor w13_qweight, Tensor w13_scales, Tensor? w13_zeros, "
    "Tensor w2_qweight, Tensor w2_scales, Tensor? w2_zeros, int group_size, str scalar_type) -> Tensor"
)
_MOE_TC_LAYOUT = "cuda.moe.tc16x64.v1"

_MOE_SCHEMA = (
    "moe(Tensor x, Tensor topk_ids, Tensor topk_weights, Tensor w13_qweight, Tensor w13_scales, Tensor? w13_zeros, "
    "Tensor w2_qweight, Tensor w2_scales, Tensor? w2_zeros, int group_size, str scalar_type) -> Tensor"
)

# FRAGMENT: other parts of the project may add ops to the same namespace.
_lib = torch.library.Library("w4a16", "FRAGMENT")
_lib.define(_PREPARE_SCHEMA)
_lib.define(_GEMM_SCHEMA)
_lib.define(_GEMM_TC_SCHEMA)
_lib.define(_MOE_SCHEMA)
_lib.define(_MOE_TC_SCHEMA)

_register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract  # torch < 2.4


# ---- helpers ---------------------------------------------------------------------------------


def to_torch(a: Optional[np.ndarray], device, bfloat16: bool = False) -> Optional[torch.Tensor]:
    """A numpy array from the extension as a torch tensor on `device` (bfloat16 arrives as uint16 bits)."""
    if a is None:
        return None
    a = np.array(a)  # a writable copy: the extension's views are read-only
    t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if bfloat16 else torch.from_numpy(a)
    return t.to(device)


def _absent(t: Optional[torch.Tensor]) -> bool:
    return t is None or t.numel() == 0


def _canonical(layer: QuantizedLinear, device, perm_always: bool):
    t = layer.tensors()
    bf16 = layer.scale_dtype == "bfloat16"
    empty = torch.empty(0, dtype=torch.int32, device=device)
    qweight = to_torch(t["qweight"], device)
    scales = to_torch(t["scales"], device, bf16)
    zeros = to_torch(t["zeros"], device) if t["zeros"] is not None else empty
    if t["perm"] is not None:
        perm = to_torch(t["perm"], device)
    elif perm_always:
        perm = torch.arange(layer.k, dtype=torch.int32, device=device)
    else:
        perm = empty.clone()
    return qweight, scales, zeros, perm


def _host(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    return None if _absent(t) else t.detach().cpu()


# ---- w4a16::prepare --------------------------------------------------------------------------


def _prepare_impl(qweight, qzeros, scales, g_idx, format, group_size, sym=True, desc_act=False,
                  checkpoint_format="gptq"):
    device = qweight.device
    if format == "awq":
        layer = QuantizedLinear.from_awq(_host(qweight), _host(qzeros), _host(scales), group_size)
    elif format == "gptq":
        # g_idx: None = absent; any tensor given is checked as [K] (an empty one is refused), so
        # whether a perm comes out depends on `g_idx is None` alone, as in the fake kernel.
        gi = None if g_idx is None else g_idx.detach().cpu()
        layer = QuantizedLinear.from_gptq(_host(qweight), _host(qzeros), _host(scales), gi,
                                          group_size=group_size, sym=sym, desc_act=desc_act,
                                          checkpoint_format=checkpoint_format)
    else:
        raise fail(ArgumentError, "format", '"awq" or "gptq"', repr(format))
    return _canonical(layer, device, perm_always=format == "gptq" and g_idx is not None)


_lib.impl("prepare", _prepare_impl, "CPU")
_lib.impl("prepare", _prepare_impl, "CUDA")


@_register_fake("w4a16::prepare", lib=_lib)
def _prepare_fake(qweight, qzeros, scales, g_idx, format, group_size, sym=True, desc_act=False,
                  checkpoint_format="gptq"):
    if format == "awq":  # qweight [K, N/8]
        k, n, has_zeros, has_perm = qweight.shape[0], qweight.shape[1] * 8, True, False
    elif format == "gptq":  # qweight [K/8, N]
        k, n, has_zeros, has_perm = qweight.shape[0] * 8, qweight.shape[1], not sym, g_idx is not None
    else:
        raise fail(ArgumentError, "format", '"awq" or "gptq"', repr(format))
    g = 1 if group_size == -1 else k // group_size
    return (
        qweight.new_empty((n, k // 8), dtype=torch.int32),
        scales.new_empty((n, g)),
        qweight.new_empty((n // 8, g) if has_zeros else (0,), dtype=torch.int32),
        qweight.new_empty((k,) if has_perm else (0,), dtype=torch.int32),
    )


def prepare(qweight, qzeros, scales, g_idx=None, *, format: str, group_size: int, sym: bool = True,
            desc_act: bool = False, checkpoint_format: str = "gptq"):
    """torch.ops.w4a16.prepare with keywords."""
    return torch.ops.w4a16.prepare(qweight, qzeros, scales, g_idx, format, group_size, sym, desc_act,
                                   checkpoint_format)


# ---- the shared workspace ---------------------------------------------------------------------

# (device index, stream) -> torch uint8 tensors, the last the largest: the workspace that every CUDA call of
# w4a16::gemm / gemm_tc / moe on that stream shares (calls on one stream never overlap), sized for the largest call so far
# (a decode step needs none). A workspace per layer binding, sized for 4096 rows, would match the layer's own weight
# bytes (llama8b.gate_up 56 MiB). Grown by doubling; the earlier buffers are kept, since a CUDA graph captured with
# one keeps using it (release_workspaces() frees them all).
_workspaces: dict = {}


def _workspace(x, stream: int, nbytes: int):
    """(pointer, bytes) of the shared workspace of x's device and `stream`, at least `nbytes`; (0, 0) for none."""
    if nbytes == 0:
        return 0, 0
    held = _workspaces.setdefault((x.get_device(), stream), [])
    if not held or held[-1].numel() < nbytes:
        held.append(torch.empty(max(nbytes, 2 * held[-1].numel()) if held else nbytes, dtype=torch.uint8,
                                device=x.device))
    t = held[-1]
    return t.data_ptr(), t.numel()


def release_workspaces() -> int:
    """Frees the workspaces that w4a16::gemm / gemm_tc / moe share per device and stream (made again on the next call);
    returns the bytes released. Not while a CUDA graph captured over these ops is still to be replayed."""
    total = sum(t.numel() for held in _workspaces.values() for t in held)
    _workspaces.clear()
    return total


# ---- w4a16::gemm -----------------------------------------------------------------------------

# id(qweight) -> (stamp, a QuantizedLinear or MoE holding host copies of the canonical tensors; their prepared
# per-device kernels live inside). One entry per weight tensor (qweight, or w13_qweight): a call whose stamp differs
# (an in-place update, other tensors or arguments) rebuilds it. The finalizer on the weight tensor drops its entry.
# A QuantizedLinear or MoE of CUDA weights drops its host copy after its first call (drop_host: the GPU then holds the
# weights as the op's tensors and as the kernel's prepared layout, the host none); a later call that needs a binding
# it lacks (another dtype, more rows) rebuilds it from the op's tensors, keeping the bindings made before.
_cache: dict = {}


def _stamp(t):
    """What tells a tensor's contents apart between calls without reading them: its address, version (bumped by
    every in-place update), shape and dtype."""
    return None if t is None else (t.data_ptr(), t._version, t.shape, t.dtype)


def _cached(weight, stamp: tuple, make):
    """The object cached for `weight` when its stamp is `stamp`, made by make() otherwise (replacing an older
    version's). One dict lookup and one tuple comparison per call."""
    ident = id(weight)
    hit = _cache.get(ident)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    obj = make()
    if hit is None:  # the first entry of this tensor: drop it when the tensor goes
        weakref.finalize(weight, _cache.pop, ident, None)
    _cache[ident] = (stamp, obj)
    return obj


def _linear_key(qweight, scales, zeros, bias, perm, group_size, scalar_type, backend):
    """(stamp, make) of the QuantizedLinear that w4a16::gemm caches for these arguments."""
    def make():
        p = _host(perm)
        if p is not None and torch.equal(p, torch.arange(p.numel(), dtype=p.dtype)):
            p = None  # the identity (a GPTQ g_idx equal to k / g): no act-order gather needed
        return QuantizedLinear.from_canonical(_host(qweight), _host(scales), _host(zeros), _host(bias), p,
                                              group_size=group_size, scalar_type=scalar_type, backend=backend)

    stamp = (_stamp(qweight), _stamp(scales), _stamp(zeros), _stamp(bias), _stamp(perm), group_size, scalar_type,
             backend)
    return stamp, make


def _layer_for(qweight, scales, zeros, bias, perm, group_size, scalar_type, backend) -> QuantizedLinear:
    return _cached(qweight, *_linear_key(qweight, scales, zeros, bias, perm, group_size, scalar_type, backend))


def _run_cached(weight, stamp, make, x, run):
    """run(layer) on the layer cached for `weight` (a QuantizedLinear or MoE). A layer that dropped its host copy and
    lacks the binding this call needs (HostReleasedError) is made again from the op's tensors, with the bindings of
    the released one carried over (_adopt), in its cache entry (whose finalizer stays). On CUDA x the layer drops its
    host copy after the call."""
    layer = _cached(weight, stamp, make)
    try:
        y = run(layer)
    except HostReleasedError:
        old, layer = layer, make()
        layer._adopt(old)
        _cache[id(weight)] = (stamp, layer)
        y = run(layer)
    if x.is_cuda and not layer.host_released:
        layer.drop_host()
    return y


def _gemm_impl(x, qweight, scales, zeros, bias, perm, group_size, scalar_type, backend=""):
    if qweight.device != x.device:
        raise fail(ArgumentError, "qweight", f"a tensor on x's device ({x.device})", f"one on {qweight.device}")
    stamp, make = _linear_key(qweight, scales, zeros, bias, perm, group_size, scalar_type, backend)
    if not x.is_cuda:
        return _run_cached(qweight, stamp, make, x, lambda layer: layer(x))  # a new [..., N] tensor
    # On CUDA the bindings hold no workspace: every call on a stream shares that stream's (_workspace).
    stream = _arrays.current_stream(x, "torch")
    return _run_cached(qweight, stamp, make, x,
                       lambda layer: layer(x, stream=stream, workspace=lambda nbytes: _workspace(x, stream, nbytes)))


_lib.impl("gemm", _gemm_impl, "CPU")
_lib.impl("gemm", _gemm_impl, "CUDA")


@_register_fake("w4a16::gemm", lib=_lib)
def _gemm_fake(x, qweight, scales, zeros, bias, perm, group_size, scalar_type, backend=""):
    torch._check(x.dtype in (torch.float16, torch.bfloat16), lambda: f"x: expected float16 or bfloat16, got {x.dtype}")
    torch._check(x.shape[-1] == qweight.shape[1] * 8, lambda: "x: expected [..., K] with K = 8 * qweight.shape[1]")
    torch._check(qweight.device == x.device, lambda: f"qweight: expected a tensor on x's device ({x.device})")
    return x.new_empty((*x.shape[:-1], qweight.shape[0]))


def gemm(x, qweight, scales, zeros=None, bias=None, perm=None, *, group_size: int, scalar_type: str,
         backend: str = ""):
    """torch.ops.w4a16.gemm with keywords."""
    return torch.ops.w4a16.gemm(x, qweight, scales, zeros, bias, perm, group_size, scalar_type, backend)


# ---- w4a16::gemm_tc --------------------------------------------------------------------------


def _tc_arrays(qweight, scales, zeros, bias, perm) -> dict:
    """The layout's arrays by name (absent ones left out), each exported for one import by the extension."""
    named = (("qweight", qweight), ("scales", scales), ("zeros", zeros), ("bias", bias), ("perm", perm))
    return {name: _arrays.export(t, "torch") for name, t in named if not _absent(t)}


def _gemm_tc_impl(x, qweight, scales, zeros, bias, perm, n, k, group_size, scalar_type, backend=""):
    if not x.is_cuda:
        raise fail(UnsupportedError, "x", f"a CUDA tensor (the prepared layout {_TC_LAYOUT} runs on the CUDA kernels "
                   "only; W4A16Linear runs anywhere)", f"one on {x.device}")
    if qweight.device != x.device:
        raise fail(ArgumentError, "qweight", f"a tensor on x's device ({x.device})", f"one on {qweight.device}")
    if x.shape[-1] != k:
        raise fail(ShapeError, "x", f"[..., K = {k}]", str(list(x.shape)))
    if x.dtype != scales.dtype:
        raise fail(DTypeError, "x", f"{scales.dtype} (the activation dtype the layout's scales were prepared in)",
                   str(x.dtype))
    stamp = (_stamp(qweight), _stamp(scales), _stamp(zeros), _stamp(bias), _stamp(perm), n, k, group_size,
             scalar_type, backend)
    rows = x.numel() // k if k else 0
    stream = _arrays.current_stream(x, "torch")
    act = "bfloat16" if x.dtype == torch.bfloat16 else "float16"

    # A view of the tensors (no weight bytes copied) with no workspace of its own. It holds no reference to them
    # (keep=False): one would keep qweight alive from its own cache entry, which goes only with qweight. Looked up
    # only while every stamp matches, i.e. while each tensor the view points at is the one at that address.
    def adopt(max_m: int):
        return _core.adopt_linear(_TC_LAYOUT, _tc_arrays(qweight, scales, zeros, bias, perm), n, k, group_size,
                                  scalar_type, act, "cuda", x.get_device(), backend, max_m, stream, False, False)

    lin = _cached(qweight, stamp, lambda: adopt(max(SHARED_MAX_M, _round_m(rows))))
    if rows > lin.max_m:
        lin = adopt(_round_m(rows))
        _cache[id(qweight)] = (stamp, lin)
    y = x.new_empty((*x.shape[:-1], n))
    if rows == 0:
        return y
    x2 = x.reshape(rows, k)
    xc = _core.take_x(_arrays.export(x2, "torch"), k, "")[0]
    ws, ws_bytes = _workspace(x, stream, lin.workspace_for(rows))
    lin.run_ws(xc, _arrays.export(y.view(rows, n), "torch"), ws, ws_bytes, stream, "")
    return y


_lib.impl("gemm_tc", _gemm_tc_impl, "CPU")
_lib.impl("gemm_tc", _gemm_tc_impl, "CUDA")


@_register_fake("w4a16::gemm_tc", lib=_lib)
def _gemm_tc_fake(x, qweight, scales, zeros, bias, perm, n, k, group_size, scalar_type, backend=""):
    torch._check(x.dtype in (torch.float16, torch.bfloat16), lambda: f"x: expected float16 or bfloat16, got {x.dtype}")
    torch._check(x.shape[-1] == k, lambda: f"x: expected [..., K = {k}]")
    torch._check(x.dtype == scales.dtype, lambda: "x: expected the dtype of the layout's scales")
    return x.new_empty((*x.shape[:-1], n))


def gemm_tc(x, qweight, scales, zeros=None, bias=None, perm=None, *, n: int, k: int, group_size: int,
            scalar_type: str, backend: str = ""):
    """torch.ops.w4a16.gemm_tc with keywords."""
    return torch.ops.w4a16.gemm_tc(x, qweight, scales, zeros, bias, perm, n, k, group_size, scalar_type, backend)


# ---- w4a16::moe ------------------------------------------------------------------------------


def _moe_routing(x, topk_ids, topk_weights, w13_qweight):
    """(ids int32, weights fp32), contiguous, of the MoE ops' routing arguments, after checking that they and the experts
    are on x's device. The library takes int32 ids and fp32 weights; torch.topk gives int64 ids (a copy of [T, k] only
    then)."""
    for t, arg in ((topk_ids, "topk_ids"), (topk_weights, "topk_weights"), (w13_qweight, "w13_qweight")):
        if t.device != x.device:
            raise fail(ArgumentError, arg, f"a tensor on x's device ({x.device})", f"one on {t.device}")
    ids = topk_ids if topk_ids.dtype == torch.int32 else topk_ids.to(torch.int32)
    weights = topk_weights if topk_weights.dtype == torch.float32 else topk_weights.to(torch.float32)
    return ids.contiguous(), weights.contiguous()


def _moe_impl(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros,
              group_size, scalar_type):
    ids, weights = _moe_routing(x, topk_ids, topk_weights, w13_qweight)
    tensors = (w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros)
    stamp = ("moe", *(_stamp(t) for t in tensors), group_size, scalar_type)

    def make():
        return MoE.from_canonical(_host(w13_qweight), _host(w13_scales), _host(w2_qweight), _host(w2_scales),
                                  _host(w13_zeros), _host(w2_zeros), group_size=group_size, scalar_type=scalar_type)

    if not x.is_cuda:
        return _run_cached(w13_qweight, stamp, make, x, lambda layer: layer(x, topk_ids=ids, topk_weights=weights))
    # On CUDA the layer's workspace is the stream's shared one (_workspace), not a buffer of its own.
    stream = _arrays.current_stream(x, "torch")
    return _run_cached(w13_qweight, stamp, make, x,
                       lambda layer: layer(x, topk_ids=ids, topk_weights=weights, stream=stream,
                                           workspace=lambda nbytes: _workspace(x, stream, nbytes)))


_lib.impl("moe", _moe_impl, "CPU")
_lib.impl("moe", _moe_impl, "CUDA")


@_register_fake("w4a16::moe", lib=_lib)
def _moe_fake(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros,
              group_size, scalar_type):
    torch._check(x.dtype in (torch.float16, torch.bfloat16), lambda: f"x: expected float16 or bfloat16, got {x.dtype}")
    torch._check(x.dim() == 2 and x.shape[1] == w13_qweight.shape[2] * 8,
                 lambda: "x: expected [T, H] with H = 8 * w13_qweight.shape[2]")
    torch._check(topk_ids.dim() == 2 and topk_ids.shape[0] == x.shape[0] and topk_weights.shape == topk_ids.shape,
                 lambda: "topk_ids, topk_weights: expected [T, k] each, T = x.shape[0]")
    return x.new_empty(x.shape)


def moe(x, topk_ids, topk_weights, w13_qweight, w13_scales, w2_qweight, w2_scales, w13_zeros=None, w2_zeros=None, *,
        group_size: int, scalar_type: str = "uint4b8"):
    """torch.ops.w4a16.moe with keywords (the zeros after the scales, as MoE.from_canonical takes them)."""
    return torch.ops.w4a16.moe(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales,
                               w2_zeros, group_size, scalar_type)


# ---- w4a16::moe_tc ---------------------------------------------------------------------------


def _moe_tc_impl(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros,
                 group_size, scalar_type):
    if not x.is_cuda:
        raise fail(UnsupportedError, "x", f"a CUDA tensor (the prepared layout {_MOE_TC_LAYOUT} runs on the CUDA layer "
                   "only; W4A16MoE runs anywhere)", f"one on {x.device}")
    ids, weights = _moe_routing(x, topk_ids, topk_weights, w13_qweight)
    if x.dtype != w13_scales.dtype:
        raise fail(DTypeError, "x", f"{w13_scales.dtype} (the activation dtype the layout's scales were prepared in)",
                   str(x.dtype))
    experts, hidden, inter = int(w13_qweight.shape[0]), int(w2_scales.shape[-1]), int(w13_scales.shape[-1]) // 2
    tensors = (w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros)
    stamp = ("moe_tc", *(_stamp(t) for t in tensors), group_size, scalar_type)
    act = "bfloat16" if x.dtype == torch.bfloat16 else "float16"
    names = ("w13_qweight", "w13_scales", "w13_zeros", "w2_qweight", "w2_scales", "w2_zeros")

    def adopt():  # views of the tensors, no reference to them (keep=False): as gemm_tc's binding
        arrays = {n: _arrays.export(t, "torch") for n, t in zip(names, tensors) if not _absent(t)}
        return _core.adopt_moe(arrays, hidden, inter, experts, group_size, scalar_type, act, x.get_device(), False)

    layer = _cached(w13_qweight, stamp, adopt)
    y = x.new_empty(x.shape)
    if x.shape[0] == 0:
        return y
    stream = _arrays.current_stream(x, "torch")
    ws, ws_bytes = _workspace(x, stream, layer.workspace_for(int(x.shape[0]), int(ids.shape[1])))
    ex = lambda t: _arrays.export(t, "torch")  # noqa: E731
    layer.run(ex(x.contiguous()), ex(y), ex(ids), ex(weights), ws, ws_bytes, stream)
    return y


_lib.impl("moe_tc", _moe_tc_impl, "CPU")
_lib.impl("moe_tc", _moe_tc_impl, "CUDA")


@_register_fake("w4a16::moe_tc", lib=_lib)
def _moe_tc_fake(x, topk_ids, topk_weights, w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros,
                 group_size, scalar_type):
    torch._check(x.dtype == w13_scales.dtype, lambda: "x: expected the dtype of the layout's scales")
    torch._check(x.dim() == 2 and x.shape[1] == w2_scales.shape[-1], lambda: "x: expected [T, H] with H of the layout")
    torch._check(topk_ids.dim() == 2 and topk_ids.shape[0] == x.shape[0] and topk_weights.shape == topk_ids.shape,
                 lambda: "topk_ids, topk_weights: expected [T, k] each, T = x.shape[0]")
    return x.new_empty(x.shape)


def _route(x: torch.Tensor, router: Optional[torch.Tensor], top_k: int, renormalize: bool):
    """(topk_ids int32 [T, k], topk_weights float32 [T, k]) in torch: fp32 logits, softmax, top k, renormalized over
    the k unless renormalize is False (Qwen3-MoE / Mixtral)."""
    if router is None:
        raise fail(ArgumentError, "topk_ids", "topk_ids and topk_weights (this module has no router)", "None")
    probs = torch.softmax(x.float() @ router.float().t(), dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return ids.to(torch.int32), weights


def _routing_of(module, x, topk_ids, topk_weights):
    """The caller's routing (both given) or the module's router's."""
    if (topk_ids is None) != (topk_weights is None):
        raise fail(ArgumentError, "topk_weights" if topk_weights is None else "topk_ids",
                   "an array, since the other of topk_ids / topk_weights was given (both or neither)", "None")
    if topk_ids is None:
        return module.route(x)
    return topk_ids, topk_weights


# ---- W4A16Linear -----------------------------------------------------------------------------


class W4A16Linear(torch.nn.Module):
    """A linear layer with 4-bit weights in the canonical layout (buffers), run by w4a16::gemm.

    Constructors: from_awq, from_gptq (checkpoint tensors), from_checkpoint (folder + prefix),
    from_quantized (a w4a16.QuantizedLinear), from_linear (quantizes a float nn.Linear).
    Move it with .to(device) like any module; the kernel layout is prepared on first use.
    """

    def __init__(self, qweight: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor] = None,
                 bias: Optional[torch.Tensor] = None, perm: Optional[torch.Tensor] = None, *, group_size: int,
                 scalar_type: Optional[str] = None, backend: str = ""):
        super().__init__()
        zeros = None if _absent(zeros) else zeros
        perm = None if _absent(perm) else perm
        self.in_features = int(qweight.shape[1]) * 8
        self.out_features = int(qweight.shape[0])
        self.group_size = int(group_size)
        self.scalar_type = scalar_type or ("uint4" if zeros is not None else "uint4b8")
        self.backend = backend
        self.register_buffer("qweight", qweight)
        self.register_buffer("scales", scales)
        self.register_buffer("zeros", zeros)
        self.register_buffer("bias", None if _absent(bias) else bias)
        self.register_buffer("perm", perm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The buffers straight from _buffers: what self.qweight etc. return, through nn.Module.__getattr__ at
        # ~0.65 us each (~0.06 us here). The op's one overload, which the packet would resolve per call (~0.1 us).
        b = self._buffers
        return torch.ops.w4a16.gemm.default(x, b["qweight"], b["scales"], b["zeros"], b["bias"], b["perm"],
                                            self.group_size, self.scalar_type, self.backend)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, group_size={self.group_size}, "
                f"scalar_type={self.scalar_type}, bias={self.bias is not None}, act_order={self.perm is not None}")

    @classmethod
    def from_quantized(cls, layer: QuantizedLinear, device=None, backend: str = "") -> "W4A16Linear":
        device = torch.device(device or "cpu")
        qweight, scales, zeros, perm = _canonical(layer, device, perm_always=False)
        bias = to_torch(layer.tensors()["bias"], device, layer.scale_dtype == "bfloat16")
        return cls(qweight, scales, zeros, bias, perm, group_size=layer.group_size, scalar_type=layer.scalar_type,
                   backend=backend or layer.backend)

    @classmethod
    def from_awq(cls, qweight, qzeros, scales, group_size: int, bias=None, backend: str = "") -> "W4A16Linear":
        qw, sc, z, perm = torch.ops.w4a16.prepare(qweight, qzeros, scales, None, "awq", group_size, False, False, "gptq")
        return cls(qw, sc, z, None if bias is None else bias.to(sc.dtype), perm, group_size=group_size,
                   scalar_type="uint4", backend=backend)

    @classmethod
    def from_gptq(cls, qweight, qzeros, scales, g_idx=None, *, group_size: int, sym: bool, desc_act: bool,
                  checkpoint_format: str = "gptq", bias=None, backend: str = "") -> "W4A16Linear":
        qw, sc, z, perm = torch.ops.w4a16.prepare(qweight, qzeros, scales, g_idx, "gptq", group_size, sym, desc_act,
                                                  checkpoint_format)
        if not _absent(perm) and torch.equal(perm.cpu(), torch.arange(perm.numel(), dtype=perm.dtype)):
            perm = None  # g_idx was k / g
        return cls(qw, sc, z, None if bias is None else bias.to(sc.dtype), perm, group_size=group_size,
                   scalar_type="uint4b8" if sym else "uint4", backend=backend)

    @classmethod
    def from_checkpoint(cls, dir: str, prefix: str, device=None, backend: str = "") -> "W4A16Linear":
        return cls.from_quantized(load_linear(dir, prefix), device, backend)

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, group_size: int = 128, scalar_type: str = "uint4",
                    backend: str = "") -> "W4A16Linear":
        """Round-to-nearest quantization of a float nn.Linear (scales bfloat16 for a bfloat16
        weight, else float16); the module lands on the linear's device."""
        w = linear.weight.detach()
        sd = torch.bfloat16 if w.dtype == torch.bfloat16 else torch.float16
        bias = None if linear.bias is None else linear.bias.detach().cpu().to(sd)
        layer = QuantizedLinear.quantize(w.cpu(), group_size, scalar_type, bias,
                                         scale_dtype="bfloat16" if sd == torch.bfloat16 else "float16")
        return cls.from_quantized(layer, w.device, backend)


class W4A16PreparedLinear(torch.nn.Module):
    """A W4A16 linear layer holding only the CUDA kernels' prepared layout "cuda.tc16x64.v1" (buffers qweight,
    scales, zeros, bias, perm as QuantizedLinear.layout_arrays names them), run in place by w4a16::gemm_tc: the
    GPU holds its weights once, where a W4A16Linear holds the canonical tensors and the kernel's own prepared copy.
    The activation dtype is fixed when it is made (the layout holds the scales and bias in it); it runs on CUDA only.
    state_dict() holds the layout; load it into a module made with the same arguments.

    Constructors: from_quantized (a w4a16.QuantizedLinear), from_checkpoint (folder + prefix), from_linear (a
    W4A16Linear); prepare_modules(model) swaps every CUDA W4A16Linear of a model for one.
    """

    def __init__(self, qweight: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor] = None,
                 bias: Optional[torch.Tensor] = None, perm: Optional[torch.Tensor] = None, *, in_features: int,
                 out_features: int, group_size: int, scalar_type: str, backend: str = ""):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.group_size = int(group_size)
        self.scalar_type = scalar_type
        self.backend = backend
        for name, t in (("qweight", qweight), ("scales", scales), ("zeros", zeros), ("bias", bias), ("perm", perm)):
            self.register_buffer(name, None if _absent(t) else t)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = self._buffers
        return torch.ops.w4a16.gemm_tc.default(x, b["qweight"], b["scales"], b["zeros"], b["bias"], b["perm"],
                                               self.out_features, self.in_features, self.group_size,
                                               self.scalar_type, self.backend)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, group_size={self.group_size}, "
                f"scalar_type={self.scalar_type}, dtype={self.scales.dtype}, layout={_TC_LAYOUT}, "
                f"bias={self.bias is not None}, act_order={self.perm is not None}")

    @classmethod
    def from_quantized(cls, layer: QuantizedLinear, device="cuda", dtype: Optional[str] = None,
                       backend: str = "") -> "W4A16PreparedLinear":
        """The layer's prepared layout for activations of `dtype` ("float16" / "bfloat16"; default its scale
        dtype), on `device`."""
        dtype = dtype or layer.scale_dtype
        _, arrays = layer.layout_arrays(dtype)
        bf16 = dtype == "bfloat16"
        t = {name: to_torch(a, device, bf16 and name in ("scales", "bias")) for name, a in arrays.items()}
        return cls(t["qweight"], t["scales"], t.get("zeros"), t.get("bias"), t.get("perm"), in_features=layer.k,
                   out_features=layer.n, group_size=layer.group_size, scalar_type=layer.scalar_type,
                   backend=backend or layer.backend)

    @classmethod
    def from_checkpoint(cls, dir: str, prefix: str, device="cuda", dtype: Optional[str] = None,
                        backend: str = "") -> "W4A16PreparedLinear":
        """One layer of a Hugging Face AWQ / GPTQ folder (as load_linear), prepared for `device` and `dtype` with no
        canonical copy on the GPU."""
        return cls.from_quantized(load_linear(dir, prefix), device, dtype, backend)

    @classmethod
    def from_linear(cls, module: W4A16Linear, dtype: Optional[str] = None) -> "W4A16PreparedLinear":
        """The prepared layout of a W4A16Linear's weights, on its device (dtype default: its scales' dtype)."""
        layer = QuantizedLinear.from_canonical(_host(module.qweight), _host(module.scales), _host(module.zeros),
                                               _host(module.bias), _host(module.perm), group_size=module.group_size,
                                               scalar_type=module.scalar_type)
        return cls.from_quantized(layer, module.qweight.device, dtype, module.backend)


def prepare_modules(model: torch.nn.Module, dtype: Optional[str] = None) -> int:
    """Swaps every W4A16Linear and W4A16MoE of `model` whose weights are on a CUDA device for a W4A16PreparedLinear /
    W4A16PreparedMoE of the same weights (activation dtype `dtype`, default each layer's scale dtype): the canonical
    GPU tensors and the ops' cached prepared copies go once nothing else refers to the old modules. Returns how many
    were swapped."""
    swaps = [(parent, name, child) for parent in model.modules() for name, child in parent.named_children()
             if (isinstance(child, W4A16Linear) and child.qweight.is_cuda)
             or (isinstance(child, W4A16MoE) and child.w13_qweight.is_cuda)]
    for parent, name, child in swaps:
        new = (W4A16PreparedLinear.from_linear(child, dtype) if isinstance(child, W4A16Linear)
               else W4A16PreparedMoE.from_module(child, dtype))
        setattr(parent, name, new)
    return len(swaps)


class W4A16MoE(torch.nn.Module):
    """A mixture-of-experts layer (Qwen3-MoE / Mixtral style) with 4-bit experts in the stacked canonical layout
    (buffers), run by w4a16::moe; the router [E, H] (a buffer, optional) routes in torch: fp32 logits, softmax,
    top k, renormalized over the k unless renormalize=False.

    Constructors: from_checkpoint (folder + layer), from_moe (a w4a16.MoE), or the stacked tensors themselves.
    forward(x [T, H], topk_ids=None, topk_weights=None): the caller's routing when given, else the router's.
    """

    def __init__(self, w13_qweight: torch.Tensor, w13_scales: torch.Tensor, w2_qweight: torch.Tensor,
                 w2_scales: torch.Tensor, w13_zeros: Optional[torch.Tensor] = None,
                 w2_zeros: Optional[torch.Tensor] = None, router: Optional[torch.Tensor] = None, *, group_size: int,
                 scalar_type: Optional[str] = None, top_k: Optional[int] = None, renormalize: bool = True):
        super().__init__()
        w13_zeros = None if _absent(w13_zeros) else w13_zeros
        w2_zeros = None if _absent(w2_zeros) else w2_zeros
        self.experts, self.hidden = int(w13_qweight.shape[0]), int(w13_qweight.shape[2]) * 8
        self.intermediate = int(w13_qweight.shape[1]) // 2
        self.group_size = int(group_size)
        self.scalar_type = scalar_type or ("uint4" if w13_zeros is not None else "uint4b8")
        self.top_k = min(8, self.experts) if top_k is None else int(top_k)
        self.renormalize = bool(renormalize)
        for name, t in (("w13_qweight", w13_qweight), ("w13_scales", w13_scales), ("w13_zeros", w13_zeros),
                        ("w2_qweight", w2_qweight), ("w2_scales", w2_scales), ("w2_zeros", w2_zeros),
                        ("router", None if _absent(router) else router)):
            self.register_buffer(name, t)

    def route(self, x: torch.Tensor):
        """(topk_ids int32 [T, k], topk_weights float32 [T, k]) from the router, in torch (on x's device)."""
        return _route(x, self.router, self.top_k, self.renormalize)

    def forward(self, x: torch.Tensor, topk_ids: Optional[torch.Tensor] = None,
                topk_weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        topk_ids, topk_weights = _routing_of(self, x, topk_ids, topk_weights)
        return torch.ops.w4a16.moe(x, topk_ids, topk_weights, self.w13_qweight, self.w13_scales, self.w13_zeros,
                                   self.w2_qweight, self.w2_scales, self.w2_zeros, self.group_size, self.scalar_type)

    def extra_repr(self) -> str:
        return (f"experts={self.experts}, hidden={self.hidden}, intermediate={self.intermediate}, "
                f"group_size={self.group_size}, scalar_type={self.scalar_type}, top_k={self.top_k}, "
                f"renormalize={self.renormalize}, router={self.router is not None}")

    @classmethod
    def from_moe(cls, moe: MoE, device=None, top_k: Optional[int] = None,
                 renormalize: Optional[bool] = None) -> "W4A16MoE":
        """The layer of a w4a16.MoE on `device`; top_k / renormalize None = the MoE's (its config.json's)."""
        device = torch.device(device or "cpu")
        t = moe.tensors()
        bf16 = moe.scale_dtype == "bfloat16"
        w = {k: to_torch(t[k], device, bf16 and k.endswith("_scales"))  # the int32 words stay int32
             for k in ("w13_qweight", "w13_scales", "w13_zeros", "w2_qweight", "w2_scales", "w2_zeros")}
        router = to_torch(t["router"], device, moe.router_dtype == "bfloat16")
        return cls(**w, router=router, group_size=moe.group_size, scalar_type=moe.scalar_type,
                   top_k=moe.top_k if top_k is None else top_k,
                   renormalize=moe.renormalize if renormalize is None else renormalize)

    @classmethod
    def from_checkpoint(cls, dir: str, layer: int, device=None, top_k: Optional[int] = None,
                        renormalize: Optional[bool] = None) -> "W4A16MoE":
        """Layer `layer` of a Hugging Face AWQ / GPTQ MoE folder (experts and router, as w4a16.load_moe; the routing
        of its config.json unless top_k / renormalize say otherwise)."""
        return cls.from_moe(MoE.load(dir, layer), device, top_k, renormalize)


class W4A16PreparedMoE(torch.nn.Module):
    """A mixture-of-experts layer holding only the CUDA layer's stacked layout "cuda.moe.tc16x64.v1" (buffers named
    as MoE.layout_arrays names them) and the router, run in place by w4a16::moe_tc: the GPU holds the experts once,
    where a W4A16MoE holds the canonical experts and the layer's own prepared copy. Routing as W4A16MoE's (the
    caller's, or the router's in torch). The activation dtype is fixed when it is made; CUDA only.

    Constructors: from_moe (a w4a16.MoE), from_checkpoint (folder + layer), from_module (a W4A16MoE);
    prepare_modules(model) swaps a model's CUDA W4A16MoE modules for one.
    """

    _NAMES = ("w13_qweight", "w13_scales", "w13_zeros", "w2_qweight", "w2_scales", "w2_zeros")

    def __init__(self, w13_qweight: torch.Tensor, w13_scales: torch.Tensor, w2_qweight: torch.Tensor,
                 w2_scales: torch.Tensor, w13_zeros: Optional[torch.Tensor] = None,
                 w2_zeros: Optional[torch.Tensor] = None, router: Optional[torch.Tensor] = None, *, group_size: int,
                 scalar_type: str, top_k: int, renormalize: bool = True):
        super().__init__()
        self.experts, self.hidden = int(w13_qweight.shape[0]), int(w2_scales.shape[-1])
        self.intermediate = int(w13_scales.shape[-1]) // 2
        self.group_size, self.scalar_type = int(group_size), scalar_type
        self.top_k, self.renormalize = int(top_k), bool(renormalize)
        for name, t in (("w13_qweight", w13_qweight), ("w13_scales", w13_scales), ("w13_zeros", w13_zeros),
                        ("w2_qweight", w2_qweight), ("w2_scales", w2_scales), ("w2_zeros", w2_zeros),
                        ("router", router)):
            self.register_buffer(name, None if _absent(t) else t)

    def route(self, x: torch.Tensor):
        """(topk_ids int32 [T, k], topk_weights float32 [T, k]) from the router, in torch (on x's device)."""
        return _route(x, self.router, self.top_k, self.renormalize)

    def forward(self, x: torch.Tensor, topk_ids: Optional[torch.Tensor] = None,
                topk_weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        topk_ids, topk_weights = _routing_of(self, x, topk_ids, topk_weights)
        b = self._buffers
        return torch.ops.w4a16.moe_tc.default(x, topk_ids, topk_weights, b["w13_qweight"], b["w13_scales"],
                                              b["w13_zeros"], b["w2_qweight"], b["w2_scales"], b["w2_zeros"],
                                              self.group_size, self.scalar_type)

    def extra_repr(self) -> str:
        return (f"experts={self.experts}, hidden={self.hidden}, intermediate={self.intermediate}, "
                f"group_size={self.group_size}, scalar_type={self.scalar_type}, dtype={self.w13_scales.dtype}, "
                f"layout={_MOE_TC_LAYOUT}, top_k={self.top_k}, renormalize={self.renormalize}, "
                f"router={self.router is not None}")

    @classmethod
    def from_moe(cls, moe: MoE, device="cuda", dtype: Optional[str] = None, top_k: Optional[int] = None,
                 renormalize: Optional[bool] = None) -> "W4A16PreparedMoE":
        """The layer of a w4a16.MoE on `device` for activations of `dtype` (default its scale dtype); top_k /
        renormalize None = the MoE's."""
        dtype = dtype or moe.scale_dtype
        bf16 = dtype == "bfloat16"
        t = {n: to_torch(a, device, bf16 and n.endswith("_scales")) for n, a in moe.layout_arrays(dtype).items()}
        router = to_torch(moe.tensors()["router"], device, moe.router_dtype == "bfloat16")  # None without one
        return cls(t["w13_qweight"], t["w13_scales"], t["w2_qweight"], t["w2_scales"], t.get("w13_zeros"),
                   t.get("w2_zeros"), router, group_size=moe.group_size, scalar_type=moe.scalar_type,
                   top_k=moe.top_k if top_k is None else top_k,
                   renormalize=moe.renormalize if renormalize is None else renormalize)

    @classmethod
    def from_checkpoint(cls, dir: str, layer: int, device="cuda", dtype: Optional[str] = None,
                        top_k: Optional[int] = None, renormalize: Optional[bool] = None) -> "W4A16PreparedMoE":
        """Layer `layer` of a Hugging Face AWQ / GPTQ MoE folder (experts and router, as w4a16.load_moe; the routing
        of its config.json unless top_k / renormalize say otherwise), prepared for `device` and `dtype`."""
        return cls.from_moe(MoE.load(dir, layer), device, dtype, top_k, renormalize)

    @classmethod
    def from_module(cls, module: W4A16MoE, dtype: Optional[str] = None) -> "W4A16PreparedMoE":
        """The prepared layout of a W4A16MoE's experts (and its router, routing settings), on its device."""
        moe = MoE.from_canonical(_host(module.w13_qweight), _host(module.w13_scales), _host(module.w2_qweight),
                                 _host(module.w2_scales), _host(module.w13_zeros), _host(module.w2_zeros),
                                 group_size=module.group_size, scalar_type=module.scalar_type, router=_host(module.router))
        return cls.from_moe(moe, module.w13_qweight.device, dtype, module.top_k, module.renormalize)


_ = _core  # the extension is loaded through .linear; imported here so the dependency is explicit
