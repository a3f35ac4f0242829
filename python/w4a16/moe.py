"""MoE: one mixture-of-experts layer (Qwen3-MoE / Mixtral style) of a Hugging Face checkpoint.

    moe = w4a16.load_moe("ckpt/", layer=0)       # AWQ or GPTQ experts + the unquantized router
    y = moe(x)                                   # x [T, H] -> y [T, H]: routed by the router, config.json's top k
    ids, weights = moe.route(x, top_k=8)         # the routing alone (host, numpy)

    # experts already in memory (an engine that loads its own weights and routes on its own):
    moe = w4a16.MoE.from_experts(gate, up, down)  # lists of QuantizedLinear (from_awq / from_gptq / ...)
    moe = w4a16.MoE.from_canonical(w13_qweight, w13_scales, w2_qweight, w2_scales, group_size=128)
    y = moe(x, topk_ids=ids, topk_weights=weights)

out[t] = sum over the k experts e of token t of weight[t, e] * down_e(silu(gate_e(x[t])) * up_e(x[t])).
CPU arrays run moe_cpu; CUDA arrays (a CUDA build) run CudaMoe, prepared once per activation dtype
and device and kept by the object. Everything is computed by the library (include/w4a16/moe);
this file picks the framework's arrays and stream, as linear.py does.
"""

from __future__ import annotations

from typing import Optional

from . import _arrays, _core
from .errors import ArgumentError, HostReleasedError, UnsupportedError, fail
from .linear import QuantizedLinear


def _rows(x, kind: str):
    """x [H] -> [1, H] (a view), and a C-contiguous [T, H] (the MoE layer reads x as one block):
    a copy only where x is not already contiguous. Returns (x2, x was 1-D)."""
    if kind == "dlpack":
        return x, False  # unknown framework: passed through; the extension checks it
    one = len(x.shape) == 1
    if one:
        x = x.reshape(1, x.shape[0])
    if kind == "torch":
        return x.detach().contiguous(), one
    if kind == "cupy":
        import cupy

        return cupy.ascontiguousarray(x), one
    import numpy as np

    return np.ascontiguousarray(x), one


def _export(a, arg: str):
    return None if a is None else _arrays.export(a, _arrays.kind_of(a, arg))


class MoE:
    """A mixture-of-experts layer: H hidden, I intermediate per expert, E experts.

    Make one with :func:`load_moe`, then call it on x [T, H] (or [H]) float16 or bfloat16
    (numpy, torch, cupy, any DLPack producer)."""

    def __init__(self, moe: "_core.Moe"):
        if not isinstance(moe, _core.Moe):
            raise TypeError("MoE(moe): use w4a16.load_moe(dir, layer)")
        self._moe = moe

    @classmethod
    def from_experts(cls, gate, up, down, router=None, *, dtype: Optional[str] = None) -> "MoE":
        """A layer from E experts in memory: gate[e] and up[e] QuantizedLinear [I, H], down[e] [H, I]
        (each made by from_awq, from_gptq, from_canonical, quantize, ...), one group size, scalar
        type and scale dtype, no bias, no act-order; the weights are copied (w13 = gate rows then
        up rows). router: [E, H] float16 or bfloat16 (dtype="bfloat16" for numpy uint16 bits), or
        None: a layer without one, called with topk_ids / topk_weights."""
        layers = []
        for arg, lst in (("gate", gate), ("up", up), ("down", down)):
            lst = list(lst)
            for e, q in enumerate(lst):
                if not isinstance(q, QuantizedLinear):
                    raise fail(ArgumentError, f"{arg}[{e}]", "a w4a16.QuantizedLinear", type(q).__name__)
            layers.append([q._host(f"{arg}[{e}]") for e, q in enumerate(lst)])
        return cls(_core.moe_from_experts(*layers, _arrays.host(router), _arrays.bits16(dtype)))

    @classmethod
    def from_canonical(cls, w13_qweight, w13_scales, w2_qweight, w2_scales, w13_zeros=None, w2_zeros=None, *,
                       group_size: int, scalar_type: Optional[str] = None, router=None,
                       dtype: Optional[str] = None) -> "MoE":
        """A layer from the stacked canonical tensors of its E experts (copied):
        w13_qweight int32 [E, 2I, H/8] (gate rows then up rows), w13_scales [E, 2I, G13],
        w13_zeros int32 [E, 2I/8, G13] (uint4 only); w2_qweight int32 [E, H, I/8], w2_scales
        [E, H, G2], w2_zeros int32 [E, H/8, G2]. scalar_type defaults to "uint4" when zeros are
        given, else "uint4b8". router as for from_experts."""
        h = _arrays.host
        return cls(_core.moe_from_canonical(h(w13_qweight), h(w13_scales), h(w13_zeros), h(w2_qweight), h(w2_scales),
                                            h(w2_zeros), int(group_size), scalar_type, h(router),
                                            _arrays.bits16(dtype)))

    @classmethod
    def load(cls, dir: str, layer: int) -> "MoE":
        """Layer `layer` of a checkpoint folder: model.layers.L.mlp.experts.E.{gate,up,down}_proj
        (AWQ or GPTQ, as config.json says) and model.layers.L.mlp.gate.weight (the router), or
        Mixtral's block_sparse_moe.experts.E.{w1,w3,w2} and block_sparse_moe.gate.weight."""
        return cls(_core.load_moe(str(dir), int(layer)))

    # ---- properties ------------------------------------------------------------------------

    hidden = property(lambda self: self._moe.hidden, doc="H")
    intermediate = property(lambda self: self._moe.intermediate, doc="I, per expert (moe_intermediate_size)")
    experts = property(lambda self: self._moe.experts, doc="E")
    group_size = property(lambda self: self._moe.group_size, doc="-1 = channelwise")
    scalar_type = property(lambda self: self._moe.scalar_type, doc='"uint4" (zero points) or "uint4b8"')
    scale_dtype = property(lambda self: self._moe.scale_dtype, doc='"float16" or "bfloat16"')
    router_dtype = property(lambda self: self._moe.router_dtype, doc="the router [E, H] as stored; None without one")
    bytes = property(lambda self: self._moe.nbytes, doc="bytes of the packed experts (w13 + w2, all E)")
    top_k = property(lambda self: self._moe.routing[0],
                     doc="experts per token when a call does not say: config.json's num_experts_per_tok, else min(8, E)")
    renormalize = property(lambda self: self._moe.routing[1],
                           doc="whether the top-k weights are renormalized when a call does not say: config.json's "
                               "norm_topk_prob (Mixtral: True), else True")
    shared_expert = property(lambda self: self._moe.shared_expert,
                             doc="the prefix of a shared expert the checkpoint holds beside the routed ones (Qwen2-MoE's "
                                 "mlp.shared_expert), whose output this layer does NOT include; None: none")
    routing_from = property(lambda self: self._moe.routing[2], doc='where top_k / renormalize came from ("default" or '
                                                                   'the config.json fields)')

    def tensors(self) -> dict:
        """The stacked canonical tensors, as from_canonical takes them (read-only numpy views;
        bfloat16 as uint16 bits; absent = None): w13_qweight, w13_scales, w13_zeros, w2_qweight,
        w2_scales, w2_zeros, router."""
        try:
            return self._moe.tensors()
        except UnsupportedError as e:
            raise self._released(e) from None

    def layout_arrays(self, dtype: Optional[str] = None) -> dict:
        """{name: numpy array}: the CUDA layer's stacked layout "cuda.moe.tc16x64.v1" of the experts for activations
        of `dtype` (default the scale dtype; bfloat16 as uint16 bits): w13_qweight, w13_scales, w13_zeros (uint4),
        w2_qweight, w2_scales, w2_zeros (uint4). A caller that keeps them on the device
        (w4a16.torch.W4A16PreparedMoE) runs the CUDA layer on them in place (_core.adopt_moe) instead of holding the
        canonical experts beside the layer's own copy. A CPU-only build raises UnsupportedError."""
        try:
            return self._moe.layout_arrays(dtype or self.scale_dtype)
        except UnsupportedError as e:
            raise self._released(e) from None

    @property
    def prepared(self) -> list:
        """The CUDA layers prepared so far: dtype, device_index, layout, weight_bytes, workspace_bytes."""
        return self._moe.prepared()

    host_released = property(lambda self: self._moe.host_released,
                             doc="True after drop_host(): only the CUDA layers prepared before it remain")

    def __repr__(self) -> str:
        shared = f", shared expert {self.shared_expert} not included" if self.shared_expert else ""
        routing = f"top {self.top_k}{'' if self.renormalize else ' (weights not renormalized)'}"
        released = ", host copy released" if self.host_released else ""
        return (f"MoE({self._moe.describe()}, scales {self.scale_dtype}, router {self.router_dtype}, {routing}, "
                f"{self.bytes} bytes{shared}{released})")

    # ---- the host copy ---------------------------------------------------------------------

    def drop_host(self) -> None:
        """Frees the experts' host tensors, keeping the CUDA layers prepared so far (their own device copies) and the
        router: a layer that runs only on the GPU then holds its experts once, there. Afterwards whatever needs them
        raises HostReleasedError: CPU calls, a CUDA call of another dtype or device, reference(), tensors()."""
        self._moe.drop_host()

    def _adopt(self, other: "MoE") -> None:
        """Takes the CUDA layers `other` prepared (the same tensors, e.g. a released copy) for the (dtype, device)
        this one lacks."""
        self._moe.adopt_prepared(other._moe)

    def _released(self, e: UnsupportedError) -> UnsupportedError:
        """The extension's refusal of a released layer as HostReleasedError; any other error as it is."""
        if self._moe.host_released and "released by drop_host()" in str(e):
            return HostReleasedError(str(e))
        return e

    # ---- running ---------------------------------------------------------------------------

    def _routing(self, top_k: Optional[int], renormalize: Optional[bool]):
        return (self.top_k if top_k is None else int(top_k),
                self.renormalize if renormalize is None else bool(renormalize))

    def route(self, x, top_k: Optional[int] = None, renormalize: Optional[bool] = None, *,
              dtype: Optional[str] = None):
        """(topk_ids int32 [T, k], topk_weights float32 [T, k]) as numpy arrays: softmax over the
        router's fp32 logits, the top k (descending, ties to the lower id), renormalized over
        those k unless renormalize=False; None = the layer's (top_k, renormalize: config.json's).
        Runs on the host: CUDA x is copied there first. A layer built without a router refuses
        (its callers give the routing)."""
        x = _arrays.host(x)
        kind = _arrays.kind_of(x)
        x2, _ = _rows(x, kind)
        k, renorm = self._routing(top_k, renormalize)
        return self._moe.route(_arrays.export(x2, kind), k, renorm, _arrays.bits16(dtype))

    def __call__(self, x, *, top_k: Optional[int] = None, renormalize: Optional[bool] = None, topk_ids=None,
                 topk_weights=None, out=None, dtype: Optional[str] = None, threads: int = 0, block: int = 0,
                 stream: Optional[int] = None, workspace=None):
        """y [T, H] (or [H]) in x's framework, dtype and device.

        Routing: by the layer's router (top_k, renormalize; None = the layer's, from config.json)
        unless topk_ids int32 [T, k] and topk_weights float32 [T, k] are given (both, on x's
        device). On CUDA the router runs on the device (fp32 logits): no copy of x, no wait.
        dtype: "bfloat16" when x is a numpy uint16 array of bfloat16 bits (y is then bits too).
        out: an optional [T, H] array to write into. threads: CPU threads (0: all).
        block: CUDA slots per block, 0 = chosen (1, 8, 16, 32, 64, 128 force a path).
        stream: a cudaStream_t as int; default the framework's current stream (torch, cupy).
        workspace (CUDA): None (the layer's own, grown with the calls), or a callable nbytes -> (device pointer as
        int, bytes) giving the call one of at least nbytes on x's device (w4a16.torch shares one per stream).
        """
        kind = _arrays.kind_of(x)
        x2, one = _rows(x, kind)
        b16 = _arrays.bits16(dtype)
        # x is exported and imported once: take_x checks it and run reads that same view.
        xc, act, device, index, t = self._moe.take_x(_arrays.export(x2, kind), b16)
        if out is None and kind == "dlpack" and device == "cuda":
            raise fail(UnsupportedError, "x", "a numpy, torch or cupy array, or out= (this DLPack producer's CUDA "
                       "arrays cannot be allocated here)", f"{type(x).__name__} on cuda:{index}")
        if out is None:
            y = _arrays.empty_out(x2, kind, t, self.hidden, act)
            y2 = y
        else:
            y = out
            y2 = out.reshape(1, out.shape[0]) if one and len(out.shape) == 1 else out
        if t > 0:  # nothing to compute otherwise; the layer need not accept empty views
            if stream is None:
                stream = _arrays.current_stream(x2, kind)
            k, renorm = self._routing(top_k, renormalize)
            try:
                self._moe.run(xc, _arrays.export(y2, _arrays.kind_of(y2, "out")),
                              _export(topk_ids, "topk_ids"), _export(topk_weights, "topk_weights"), k, renorm,
                              int(threads), int(block), int(stream), b16, workspace)
            except UnsupportedError as e:
                raise self._released(e) from None
        if out is None and one:
            return y.reshape(self.hidden)
        return y

    def reference(self, x, topk_ids, topk_weights, *, dtype: Optional[str] = None):
        """The f64 oracle (moe_reference) for given routing: y [T, H] (or [H]) in x's dtype, on the
        host (CUDA inputs are copied there; torch in -> torch CPU out, else numpy)."""
        for a, arg in ((topk_ids, "topk_ids"), (topk_weights, "topk_weights")):
            if a is None:
                raise fail(ArgumentError, arg, "an array (the reference runs the routing it is given)", "None")
        h = _arrays.host
        x = h(x)
        kind = _arrays.kind_of(x)
        x2, one = _rows(x, kind)
        b16 = _arrays.bits16(dtype)
        xc, act, _, _, t = self._moe.take_x(_arrays.export(x2, kind), b16)
        y = _arrays.empty_out(x2, kind, t, self.hidden, act)
        if t > 0:
            ids, weights = h(topk_ids), h(topk_weights)
            try:
                self._moe.reference(xc, _export(ids, "topk_ids"), _export(weights, "topk_weights"),
                                    _arrays.export(y, kind), b16)
            except UnsupportedError as e:
                raise self._released(e) from None
        return y.reshape(self.hidden) if one else y

    def explain(self, tokens: int, top_k: Optional[int] = None) -> str:
        """How the CUDA layer runs T tokens: the slots per block it chooses, and why (CUDA builds)."""
        return _core.moe_explain_block(int(tokens), self._routing(top_k, None)[0], self.experts)


def load_moe(dir: str, layer: int) -> MoE:
    """One MoE layer of an AWQ/GPTQ checkpoint folder: ``load_moe("ckpt/", 0)``."""
    return MoE.load(dir, layer)
