"""QuantizedLinear: an owned canonical W4A16 layer that runs through w4a16::Linear.

The layer's canonical tensors live on the host (shared/FORMATS.md). Calling it on an array
picks (once per device, activation dtype and backend) a kernel through the registry, which
prepares its own copy of the weights (uploading them for CUDA kernels), then runs on the
caller's memory with no copies: numpy in -> numpy out, torch in -> torch out. A layer that only
runs on CUDA may drop its host copy once prepared (drop_host).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _arrays, _core
from .errors import HostReleasedError, UnsupportedError, fail


class QuantizedLinear:
    """y = x . W^T (+ bias) with 4-bit weights W [N, K] and 16-bit activations.

    Make one with :func:`load_linear`, :meth:`from_awq`, :meth:`from_gptq`,
    :meth:`from_canonical`, :meth:`quantize` or :func:`pack`, then call it:
    ``y = layer(x)`` with x [..., K] float16 or bfloat16 (numpy, torch, cupy, any DLPack).
    """

    def __init__(self, layer: "_core.Layer", backend: Optional[str] = None):
        if not isinstance(layer, _core.Layer):
            raise TypeError("QuantizedLinear(layer): use load_linear, from_awq, from_gptq, from_canonical or quantize")
        self._layer = layer
        self._n, self._k = layer.n, layer.k  # read on every call; the layer never changes
        self.backend = backend or ""
        self._linears: dict = {}
        self._last: Optional[_core.Linear] = None
        self._info: Optional[dict] = None  # drop_host: what the properties read once the layer is gone

    # ---- constructors --------------------------------------------------------------------

    @classmethod
    def from_awq(cls, qweight, qzeros, scales, group_size: int, bias=None, *, dtype: Optional[str] = None,
                 backend: Optional[str] = None) -> "QuantizedLinear":
        """AutoAWQ GEMM tensors: qweight int32 [K, N/8], qzeros int32 [G, N/8], scales [G, N]."""
        h = _arrays.host
        return cls(_core.from_awq(h(qweight), h(qzeros), h(scales), group_size, h(bias), _arrays.bits16(dtype)), backend)

    @classmethod
    def from_gptq(cls, qweight, qzeros, scales, g_idx=None, *, group_size: int, sym: bool, desc_act: bool,
                  checkpoint_format: str = "gptq", bias=None, dtype: Optional[str] = None,
                  backend: Optional[str] = None) -> "QuantizedLinear":
        """GPTQ tensors: qweight int32 [K/8, N], qzeros int32 [G, N/8] (may be None when sym),
        scales [G, N], g_idx int32 [K]. checkpoint_format "gptq" (v1: stored zero = z - 1) or "gptq_v2"."""
        h = _arrays.host
        return cls(_core.from_gptq(h(qweight), h(qzeros), h(scales), h(g_idx), h(bias), group_size, bool(sym),
                                   bool(desc_act), checkpoint_format, _arrays.bits16(dtype)), backend)

    @classmethod
    def from_canonical(cls, qweight, scales, zeros=None, bias=None, perm=None, *, group_size: int,
                       scalar_type: Optional[str] = None, dtype: Optional[str] = None,
                       backend: Optional[str] = None) -> "QuantizedLinear":
        """The canonical layout: qweight int32 [N, K/8], scales [N, G], zeros int32 [N/8, G]
        (packed, uint4 only), bias [N], perm int32 [K]. scalar_type defaults to "uint4" when
        zeros are given, else "uint4b8"."""
        h = _arrays.host
        return cls(_core.from_canonical(h(qweight), h(scales), h(zeros), h(bias), h(perm), group_size, scalar_type,
                                        _arrays.bits16(dtype)), backend)

    @classmethod
    def quantize(cls, weight, group_size: int = 128, scalar_type: str = "uint4", bias=None, *,
                 scale_dtype: Optional[str] = None, dtype: Optional[str] = None,
                 backend: Optional[str] = None) -> "QuantizedLinear":
        """Round-to-nearest quantization of float weights [N, K] (float16, bfloat16, float32).
        Scales are bfloat16 for bfloat16 weights, else float16, unless scale_dtype says."""
        h = _arrays.host
        return cls(_core.quantize(h(weight), group_size, scalar_type, scale_dtype, h(bias), _arrays.bits16(dtype)), backend)

    @classmethod
    def load(cls, dir: str, prefix: str, *, backend: Optional[str] = None) -> "QuantizedLinear":
        """One layer of a Hugging Face AWQ/GPTQ checkpoint folder, by tensor-name prefix."""
        return cls(_core.load_linear(str(dir), prefix), backend)

    # ---- properties ------------------------------------------------------------------------

    _INFO = ("n", "k", "group_size", "groups", "scalar_type", "scale_dtype", "has_bias", "act_order", "nbytes")

    def _get(self, name: str):
        return getattr(self._layer, name) if self._layer is not None else self._info[name]

    n = property(lambda self: self._get("n"), doc="out features")
    k = property(lambda self: self._get("k"), doc="in features")
    group_size = property(lambda self: self._get("group_size"), doc="-1 = channelwise")
    groups = property(lambda self: self._get("groups"), doc="G = K / group_size")
    scalar_type = property(lambda self: self._get("scalar_type"), doc='"uint4" (zero points) or "uint4b8"')
    scale_dtype = property(lambda self: self._get("scale_dtype"), doc='"float16" or "bfloat16"')
    has_bias = property(lambda self: self._get("has_bias"))
    act_order = property(lambda self: self._get("act_order"))
    bytes = property(lambda self: self._get("nbytes"), doc="bytes of the packed canonical tensors")
    host_released = property(lambda self: self._layer is None,
                             doc="True after drop_host(): only the CUDA bindings made before it remain")

    @property
    def kernel(self) -> str:
        """The kernel of the most recent call; before any call, the one the registry would choose
        for CPU activations of the scale dtype."""
        if self._last is not None:
            return self._last.kernel
        return _core.explain_layer(self._host("kernel"), self.scale_dtype, "cpu", 0, self.backend, [])["chosen"]

    @property
    def linears(self) -> list:
        """The prepared (device, dtype, backend) bindings made so far."""
        return list(self._linears.values())

    def __repr__(self) -> str:
        if self._layer is not None:
            desc, released = self._layer.describe(), ""
        else:
            desc, released = self._info["describe"], ", host copy released"
        return (f"QuantizedLinear({desc}, scales {self.scale_dtype}"
                f"{', bias' if self.has_bias else ''}{', act-order' if self.act_order else ''}, {self.bytes} bytes"
                f"{released})")

    # ---- the host copy ---------------------------------------------------------------------

    def drop_host(self) -> None:
        """Frees the host copy of the canonical tensors, keeping the CUDA bindings made so far (their weights are
        the kernels' own device copies): a layer that runs only on the GPU then holds its weights once, there.
        CPU bindings go with it (CPU kernels run on the canonical tensors). Afterwards whatever needs the tensors
        raises HostReleasedError: a binding not made before (another device, dtype or backend, or more rows than
        its max_m), tensors(), unpack(), dequantize(), to_awq(), to_gptq(), explain()."""
        if self._layer is None:
            return
        self._info = {name: getattr(self._layer, name) for name in self._INFO}
        self._info["describe"] = self._layer.describe()
        self._linears = {key: lin for key, lin in self._linears.items() if not lin.holds_canonical}
        if self._last is not None and self._last.holds_canonical:
            self._last = None
        self._layer = None

    def _adopt(self, other: "QuantizedLinear") -> None:
        """Takes the bindings of `other` (the same tensors, e.g. a released copy) for the keys this one lacks."""
        for key, lin in other._linears.items():
            self._linears.setdefault(key, lin)

    def _host(self, what: str) -> "_core.Layer":
        if self._layer is None:
            raise fail(HostReleasedError, what, "a QuantizedLinear holding its canonical tensors",
                       "one whose host copy was released by drop_host() (its CUDA bindings made before remain: "
                       + (", ".join(f"{d}:{i} {t}" for t, d, i, *_ in self._linears) or "none") + ")")
        return self._layer

    # ---- running ---------------------------------------------------------------------------

    def linear(self, dtype: str = "float16", device: str = "cpu", device_index: int = 0,
               backend: Optional[str] = None, max_m: int = 4096, stream: int = 0,
               own_workspace: bool = True) -> "_core.Linear":
        """The prepared binding for (device, activation dtype, backend), made on first use. own_workspace=False: a
        binding with no workspace of its own (each call passes one: __call__'s workspace=), made up to SHARED_MAX_M
        rows since its bound costs nothing."""
        b = self.backend if backend is None else backend
        key = (dtype, device, device_index if device == "cuda" else 0, b) + (() if own_workspace else ("shared",))
        if not own_workspace:
            max_m = max(max_m, SHARED_MAX_M)
        lin = self._linears.get(key)
        if lin is None or lin.max_m < max_m:
            layer = self._host(f"linear({dtype!r}, {device!r}, {key[2]}, backend={b!r}, max_m={max_m})")
            lin = _core.make_linear(layer, dtype, device, key[2], b, max(max_m, lin.max_m if lin else 0), stream,
                                    own_workspace)
            self._linears[key] = lin
        return lin

    def __call__(self, x, *, out=None, backend: Optional[str] = None, dtype: Optional[str] = None,
                 stream: Optional[int] = None, workspace=None):
        """y [..., N] = x [..., K] . W^T (+ bias), in x's framework, dtype and device.

        dtype: "bfloat16" when x is a numpy uint16 array of bfloat16 bits (the result is then
        uint16 bits too). out: an optional [M, N] (or [..., N]) array to write into.
        stream: a cudaStream_t as int; default the framework's current stream (torch, cupy).
        workspace: None (the binding's own, sized for 4096 rows and more as calls grow), or a callable
        nbytes -> (device pointer as int, its bytes) giving the call a workspace of at least nbytes on x's
        device (0 -> (0, 0)): layers sharing one (w4a16.torch does, per device and stream) hold none each.
        """
        kind = _arrays.kind_of(x)
        x2, lead = _arrays.as_rows(x, kind, self._k)
        b16 = _arrays.bits16(dtype)
        # x is exported and imported once: take_x checks it (dtype, [M, K], device) and lin.run reads that same view.
        xc, act, device, index, m = _core.take_x(_arrays.export(x2, kind), self._k, b16)
        if out is None and kind == "dlpack" and device == "cuda":
            raise fail(UnsupportedError, "x", "a numpy, torch or cupy array, or out= (this DLPack producer's CUDA "
                       "arrays cannot be allocated here)", f"{type(x).__name__} on cuda:{index}")
        if m == 0:  # nothing to compute; kernels need not accept empty views
            y = _arrays.empty_out(x2, kind, 0, self._n, act) if out is None else out
            return _arrays.reshape_out(y, lead) if out is None else out
        if stream is None:
            stream = _arrays.current_stream(x2, kind)
        # prepare's uploads too
        lin = self.linear(act, device, index, backend, max_m=_round_m(m), stream=stream, own_workspace=workspace is None)
        self._last = lin
        if out is None:
            y = _arrays.empty_out(x2, kind, m, self._n, act)
            y2 = y
        else:
            y = out
            # out [..., N] matching x's leading dims is viewed as [M, N]; any other shape goes to the
            # extension as is, which names it in the error.
            y2 = out
            if lead is not None and tuple(out.shape) == tuple(lead) + (self._n,) and len(out.shape) != 2:
                y2 = out.reshape(m, self._n)
        if workspace is None:
            lin.run(xc, _arrays.export(y2, _arrays.kind_of(y2)), stream, b16)
        else:
            ws, ws_bytes = workspace(lin.workspace_for(m))
            lin.run_ws(xc, _arrays.export(y2, _arrays.kind_of(y2)), ws, ws_bytes, stream, b16)
        return _arrays.reshape_out(y, lead) if out is None else out

    # ---- views and conversions -------------------------------------------------------------

    def tensors(self) -> dict:
        """Canonical tensors (read-only numpy views; bfloat16 as uint16 bits; absent = None)."""
        return self._host("tensors()").tensors()

    def unpack(self) -> dict:
        """One uint8 per 4-bit value: q [N, K], z [N, G] or None, scales, bias, perm, ..."""
        return self._host("unpack()").unpack()

    def dequantize(self):
        """float32 W [N, K] in the original input-channel order (y = x . W^T + bias)."""
        return self._host("dequantize()").dequantize()

    def to_awq(self) -> dict:
        return self._host("to_awq()").to_awq()

    def to_gptq(self, checkpoint_format: Optional[str] = None) -> dict:
        return self._host("to_gptq()").to_gptq(checkpoint_format)

    def layout_arrays(self, dtype: Optional[str] = None, kernel: str = "cuda_hybrid") -> tuple:
        """(layout tag, {name: numpy array}): the bytes of `kernel`'s prepared layout for this layer and activation
        dtype (default: the scale dtype), as the kernel would upload them; bfloat16 as uint16 bits. A caller that
        keeps these arrays on the device (w4a16.torch.W4A16PreparedLinear) runs the kernels on them in place
        (_core.adopt_linear) instead of holding the canonical tensors beside the kernel's own copy. Only the CUDA
        kernels of layout "cuda.tc16x64.v1" have one (others raise UnsupportedError)."""
        return _core.layout_arrays(self._host("layout_arrays()"), kernel, dtype or self.scale_dtype)

    def explain(self, dtype: Optional[str] = None, device: str = "cpu", capability: Optional[int] = None,
                backend: Optional[str] = None, disabled: Sequence[str] = (), ms: Sequence[int] = ()) -> str:
        """The registry's decision for this layer: chosen kernel and why each one above refused; with ms, how
        the chosen kernel runs each of those token counts (the hybrid's path and plan)."""
        cap = _default_capability(device, capability)
        d = _core.explain_layer(self._host("explain()"), dtype or self.scale_dtype, device, cap,
                                self.backend if backend is None else backend, list(disabled), [int(m) for m in ms])
        return _decision_text(d)


def _decision_text(d: dict) -> str:
    text = d["text"]
    if d["runs"]:
        text = text.rstrip("\n") + "\n" + f"how {d['chosen']} runs M tokens:\n"
        text += "".join(f"  M={m}: {how or 'one path at every M'}\n" for m, how in d["runs"])
    return text


SHARED_MAX_M = 1 << 20  # the rows a binding without its own workspace takes (its bound costs no memory)


def _round_m(m: int) -> int:
    # Workspace is sized for a max M; grow in powers of two so a stream of growing M rebuilds rarely.
    r = 4096
    while r < m:
        r *= 2
    return r


def _default_capability(device: str, capability: Optional[int]) -> int:
    if capability is not None:
        return int(capability)
    return 90 if device == "cuda" else 0  # sm_90a (H100/H200) is the measured target


# ---- module-level API ------------------------------------------------------------------------


def load_linear(dir: str, prefix: str, *, backend: Optional[str] = None) -> QuantizedLinear:
    """One quantized layer of an AWQ/GPTQ checkpoint folder: ``load_linear(d, "model.layers.0.mlp.up_proj")``."""
    return QuantizedLinear.load(dir, prefix, backend=backend)


from_awq = QuantizedLinear.from_awq
from_gptq = QuantizedLinear.from_gptq
from_canonical = QuantizedLinear.from_canonical
quantize = QuantizedLinear.quantize


def pack(q, scales, z=None, bias=None, perm=None, *, group_size: int, scalar_type: Optional[str] = None,
         dtype: Optional[str] = None) -> QuantizedLinear:
    """Unpacked values -> canonical layer: q uint8 [N, K] (0..15, canonical K order), z uint8
    [N, G] (uint4 only), scales [N, G], bias [N], perm int32 [K]."""
    h = _arrays.host
    return QuantizedLinear(_core.pack(h(q), h(scales), h(z), h(bias), h(perm), group_size, scalar_type,
                                      _arrays.bits16(dtype)))


def unpack(layer: QuantizedLinear) -> dict:
    """Canonical layer -> one uint8 per value (the inverse of :func:`pack`, bit for bit)."""
    return layer.unpack()


def dequantize(layer: QuantizedLinear):
    """float32 W [N, K] in the original input-channel order."""
    return layer.dequantize()


def kernels() -> list:
    """Every registered kernel: name, device, min_capability, layout, override_only_reason."""
    return _core.kernels()


def explain(layer: Optional[QuantizedLinear] = None, *, n: Optional[int] = None, k: Optional[int] = None,
            group_size: int = 128, scalar_type: str = "uint4", dtype: str = "float16", device: str = "cpu",
            capability: Optional[int] = None, bias: bool = False, act_order: bool = False,
            backend: Optional[str] = None, disabled: Sequence[str] = (), ms: Sequence[int] = ()) -> str:
    """The registry's decision, printable: for a layer, or for a configuration given by n, k, ...
    capability defaults to 0 on the CPU and 90 (sm_90a) on CUDA; ms adds how the chosen kernel runs those
    token counts (as `w4a16 explain --m`)."""
    return _decision_text(choose(layer, n=n, k=k, group_size=group_size, scalar_type=scalar_type, dtype=dtype,
                                 device=device, capability=capability, bias=bias, act_order=act_order,
                                 backend=backend, disabled=disabled, ms=ms))


def choose(layer: Optional[QuantizedLinear] = None, *, n: Optional[int] = None, k: Optional[int] = None,
           group_size: int = 128, scalar_type: str = "uint4", dtype: str = "float16", device: str = "cpu",
           capability: Optional[int] = None, bias: bool = False, act_order: bool = False,
           backend: Optional[str] = None, disabled: Sequence[str] = (), ms: Sequence[int] = ()) -> dict:
    """Like :func:`explain`, as a dict: chosen, refused [(kernel, reason)], text, runs [(M, how)]."""
    cap = _default_capability(device, capability)
    ms = [int(m) for m in ms]
    if layer is not None:
        if not isinstance(layer, QuantizedLinear):
            raise TypeError(f"layer: expected a QuantizedLinear, got {type(layer).__name__}")
        return _core.explain_layer(layer._host("explain()"), dtype, device, cap,
                                   layer.backend if backend is None else backend, list(disabled), ms)
    if n is None or k is None:
        raise TypeError("explain: pass a layer, or n= and k= (and group_size=, scalar_type=, dtype=, ...)")
    return _core.explain_config(int(n), int(k), int(group_size), scalar_type, dtype, device, cap, bool(bias),
                                bool(act_order), backend or "", list(disabled), ms)


class Checkpoint:
    """A Hugging Face checkpoint folder: its quantization config and quantized layers."""

    def __init__(self, dir: str):
        self._ck = _core.Checkpoint.open(str(dir))

    dir = property(lambda self: self._ck.dir)
    quantization_config = property(lambda self: self._ck.quantization_config)
    quantized_layers = property(lambda self: self._ck.quantized_layers, doc="list of dicts: prefix, format, n, k, ...")
    unquantized_linears = property(lambda self: self._ck.unquantized_linears)

    def layer(self, prefix: str) -> dict:
        return self._ck.layer(prefix)

    def load_linear(self, prefix: str, *, backend: Optional[str] = None) -> QuantizedLinear:
        return QuantizedLinear(self._ck.load_linear(prefix), backend)


def open_checkpoint(dir: str) -> Checkpoint:
    return Checkpoint(dir)


def save_checkpoint(dir: str, layers: dict, *, format: str = "gptq", dense: Optional[dict] = None,
                    modules_to_not_convert: Sequence[str] = (), shard_bytes: int = 0,
                    config: Optional[dict] = None, dtype: Optional[str] = None) -> None:
    """Writes a Hugging Face folder with the library's writer (io::write_hf_checkpoint):
    config.json (``config``'s fields plus quantization_config) and model.safetensors, or shards
    of at most ``shard_bytes`` with an index. ``layers``: {prefix: QuantizedLinear}, all of one
    group size and scalar type; format "awq" (uint4, no act-order) or "gptq" (v1 for uint4b8,
    gptq_v2 for uint4). ``dense``: {name: array} written as given (e.g. "lm_head.weight"); uint16
    arrays are written as BF16 when ``dtype="bfloat16"`` (numpy has no bfloat16: pass its bits)."""
    import json

    items = []
    for prefix, layer in layers.items():
        if not isinstance(layer, QuantizedLinear):
            raise TypeError(f"layers[{prefix!r}]: expected a QuantizedLinear, got {type(layer).__name__}")
        items.append((str(prefix), layer._host(f"layers[{prefix!r}]")))
    dense_items = [(str(k), _arrays.host(v)) for k, v in (dense or {}).items()]
    _core.write_checkpoint(str(dir), items, dense_items, format, list(modules_to_not_convert), int(shard_bytes),
                           json.dumps(config or {}), _arrays.bits16(dtype))


def save_safetensors(path: str, tensors: Any, metadata: Optional[dict] = None, *, dtype: Optional[str] = None) -> None:
    """Writes a safetensors file with the library's writer. tensors: a dict or (name, array)
    pairs, contiguous host arrays; uint16 arrays are written as BF16 when dtype="bfloat16"."""
    items = list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    items = [(str(k), _arrays.host(v)) for k, v in items]
    _core.write_safetensors(str(path), items, {str(k): str(v) for k, v in (metadata or {}).items()}, _arrays.bits16(dtype))


def load_safetensors(path: str):
    """(tensors, metadata, dtype tags) of a safetensors file, read by the library's strict reader.
    Tensors are read-only numpy views of the mapped file; BF16 ones come back as uint16 bits."""
    return _core.read_safetensors(str(path))
