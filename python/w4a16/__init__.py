"""w4a16: W4A16 linear and mixture-of-experts layers (4-bit weights, 16-bit activations) over
the hybrid-w4a16 C++/CUDA library. See docs/PYTHON.md.

    import w4a16
    layer = w4a16.load_linear("ckpt/", "model.layers.0.mlp.up_proj")
    y = layer(x)                 # numpy float16 [M, K] -> numpy [M, N]; torch -> torch
    print(layer.explain())       # which kernel, and why the ones above it refused
    moe = w4a16.load_moe("ckpt/", 0)
    y = moe(x_hidden, top_k=8)   # routed by the layer's router, the experts' outputs summed

``w4a16.torch`` (custom ops w4a16::prepare / w4a16::gemm / w4a16::moe and W4A16Linear) is
imported on first use and needs PyTorch.
"""

from . import _core
from ._arrays import bfloat16_bits_to_float32, float32_to_bfloat16_bits
from .errors import (
    AlignmentError,
    ArgumentError,
    CudaError,
    DTypeError,
    Error,
    FileError,
    FormatError,
    HostReleasedError,
    InternalError,
    LayoutError,
    NotFoundError,
    ShapeError,
    UnsupportedError,
)
from .errors import BY_CODE as _BY_CODE
from .linear import (
    Checkpoint,
    QuantizedLinear,
    choose,
    dequantize,
    explain,
    from_awq,
    from_canonical,
    from_gptq,
    kernels,
    load_linear,
    load_safetensors,
    open_checkpoint,
    pack,
    quantize,
    save_checkpoint,
    save_safetensors,
    unpack,
)
from .moe import MoE, load_moe

_core._register_errors(dict(_BY_CODE))

__version__ = "0.1.0"
has_cuda: bool = bool(_core.has_cuda)  # built with the CUDA kernels (W4A16_ENABLE_CUDA=ON)
cuda_archs: str = str(_core.cuda_archs)  # their code: W4A16_CUDA_ARCHS ("90a", "90a,80", "80+ptx"); "" without CUDA
cpu_isa = _core.cpu_isa  # cpu_isa() -> "amx" | "vnni" | "avx2" | "scalar": what cpu_fast runs here at many rows (W4A16_CPU_ISA caps it)

__all__ = [
    "AlignmentError", "ArgumentError", "Checkpoint", "CudaError", "DTypeError", "Error", "FileError",
    "FormatError", "HostReleasedError", "InternalError", "LayoutError", "MoE", "NotFoundError", "QuantizedLinear",
    "ShapeError",
    "UnsupportedError", "bfloat16_bits_to_float32", "choose", "dequantize", "explain",
    "float32_to_bfloat16_bits", "from_awq", "from_canonical", "from_gptq", "has_cuda", "cuda_archs", "cpu_isa", "kernels",
    "load_linear", "load_moe", "load_safetensors", "open_checkpoint", "pack", "quantize", "save_checkpoint", "save_safetensors",
    "unpack",
]


def __getattr__(name):
    # `w4a16.torch` is loaded on first use so that importing w4a16 never imports torch.
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'w4a16' has no attribute {name!r}")
