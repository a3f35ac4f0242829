"""Array plumbing between Python frameworks and the extension: which framework an array
comes from, 2-D views of activations, output allocation in the caller's framework, the
current CUDA stream, and bfloat16 bit helpers for numpy (which has no bfloat16 dtype).

Nothing here computes: the extension reads every array through DLPack / the buffer protocol
without copying, and the kernels do the rest.
"""

from __future__ import annotations

import numpy as np

from .errors import DTypeError, fail


def kind_of(x, arg: str = "x") -> str:
    """"numpy", "torch", "cupy" or "dlpack" (any other DLPack producer); anything else is refused
    naming `arg`."""
    if isinstance(x, np.ndarray):
        return "numpy"
    mod = type(x).__module__ or ""
    if mod.startswith("torch") and hasattr(x, "is_cuda"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    if hasattr(x, "__dlpack__"):
        return "dlpack"
    raise fail(DTypeError, arg, "a numpy array or a DLPack tensor (torch, cupy, ...)", type(x).__name__)


def is_cuda(x, kind: str) -> bool:
    if kind == "torch":
        return bool(x.is_cuda)
    if kind == "cupy":
        return True
    if kind == "dlpack" and hasattr(x, "__dlpack_device__"):
        return x.__dlpack_device__()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
    return False


def as_rows(x, kind: str, k: int):
    """x [..., K] -> (x2 [M, K] with unit inner stride, leading shape). Reshapes are views where
    the layout allows; a copy is made only when the innermost stride is not 1, or rows run
    backwards or overlap (the kernels read rows of K contiguous values, stepping forward by at
    least K; row padding, e.g. x[:, :K] of a wider array, is kept as is)."""
    if kind == "dlpack":
        return x, None  # unknown framework: passed through; the extension checks it
    shape = tuple(x.shape)
    if len(shape) == 0:
        return x, None  # the extension names the rank error
    lead = shape[:-1]
    if kind == "torch":
        x2 = x.detach() if x.requires_grad else x  # reshaped without autograd history (detach costs ~0.4 us)
        x2 = x2.reshape(-1, shape[-1]) if len(shape) != 2 else x2
        rows, cols = x2.shape
        row_stride, col_stride = x2.stride()
        overlapping = rows > 1 and row_stride < cols  # expand(): rows share memory
        if (cols > 1 and col_stride != 1) or overlapping:
            x2 = x2.contiguous()
        return x2, lead
    # numpy and cupy share the API (strides in bytes)
    x2 = x.reshape(-1, shape[-1]) if len(shape) != 2 else x
    inner_bad = x2.shape[-1] > 1 and x2.strides[-1] != x2.itemsize
    # x[::-1] (kernels step rows forward) and broadcast_to (rows share memory): copied
    rows_bad = x2.shape[0] > 1 and x2.strides[0] < x2.shape[-1] * x2.itemsize
    if inner_bad or rows_bad:
        x2 = x2.copy(order="C")
    return x2, lead


def empty_out(x2, kind: str, m: int, n: int, dtype: str):
    """A new [M, N] output in x's framework, dtype and device."""
    if kind == "torch":
        import torch

        return torch.empty((m, n), dtype=x2.dtype, device=x2.device)
    if kind == "cupy":
        import cupy

        return cupy.empty((m, n), dtype=x2.dtype)
    if kind == "numpy":
        return np.empty((m, n), dtype=x2.dtype)  # float16, or uint16 bits for bfloat16
    # Other DLPack producers on the CPU get numpy back (the extension refuses CUDA ones).
    return np.empty((m, n), dtype=np.float16 if dtype == "float16" else np.uint16)


def reshape_out(out, lead):
    if lead is None or len(lead) == 1:
        return out
    return out.reshape(*lead, out.shape[-1])


def current_stream(x, kind: str) -> int:
    """The caller's current CUDA stream as an integer cudaStream_t (0 on the CPU)."""
    if kind == "torch" and x.is_cuda:
        import torch

        # torch.cuda.current_stream(x.device).cuda_stream without making a torch.cuda.Stream object (~3 us a
        # call): the same at::cuda::getCurrentCUDAStream(index).stream(), as torch.compile's generated code reads it.
        return int(torch._C._cuda_getCurrentRawStream(x.get_device()))
    if kind == "cupy":
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)
    return 0


def bits16(dtype) -> str:
    """The extension's spelling of a dtype= keyword ("bfloat16" marks uint16 arrays as bf16 bits): "" when absent."""
    return "" if dtype is None else str(dtype)


def export(x, kind: str):
    """What to hand to the extension. torch tensors (CPU and CUDA, every dtype) go as a DLPack capsule
    from torch.utils.dlpack.to_dlpack: ~0.3 us, against ~0.7 us for a CPU tensor's numpy view and
    ~2 us for Tensor.__dlpack__ (measured 2026-12-05, stop 42, CPU); and it inserts no cross-stream
    wait (Tensor.__dlpack__() with no stream makes the legacy default stream wait on the current one,
    which would also break CUDA-graph capture): the kernel is launched on the caller's current stream
    instead. A capsule is consumed by one import: export again for each call into the extension."""
    if kind == "torch":
        return (_TO_DLPACK or _to_dlpack())(x)
    return x


_TO_DLPACK = None


def _to_dlpack():
    """torch.utils.dlpack.to_dlpack, looked up on first use (a torch tensor means torch is imported)."""
    global _TO_DLPACK
    import torch.utils.dlpack

    _TO_DLPACK = torch.utils.dlpack.to_dlpack
    return _TO_DLPACK


def host(x):
    """A host array for the converters (which run on the CPU): torch/cupy device arrays are
    copied to the host once, at load time; everything else passes through."""
    if x is None:
        return None
    kind = type(x).__module__ or ""
    if kind.startswith("torch"):
        x = x.detach()
        return x.cpu() if x.is_cuda else x
    if kind.startswith("cupy"):
        import cupy

        return cupy.asnumpy(x)
    return x


# ---- bfloat16 bits for numpy -------------------------------------------------------------


def float32_to_bfloat16_bits(a) -> np.ndarray:
    """float32 values -> uint16 bfloat16 bits, round to nearest even (NaN stays NaN)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def bfloat16_bits_to_float32(b) -> np.ndarray:
    """uint16 bfloat16 bits -> float32 (exact)."""
    return (np.ascontiguousarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
