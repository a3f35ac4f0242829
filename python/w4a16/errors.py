"""Exceptions of the w4a16 package.

Every error the C++ library raises arrives as one of these classes, chosen by its error code
(include/w4a16/core/error.hpp), with the C++ message verbatim as ``str(e)`` and the code's name
as ``e.code``. All are ``ValueError`` subclasses (``DTypeError`` is also a ``TypeError``), so
callers that only know the standard exceptions still catch them.
"""

from __future__ import annotations


class Error(ValueError):
    """Base class: a w4a16 error. ``code`` is the C++ ErrorCode name."""

    code = "error"

    def __init__(self, message: str = "", code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class ArgumentError(Error):
    """A value out of its allowed set (group size 48, an unknown backend name, ...)."""

    code = "invalid_argument"


class DTypeError(TypeError, Error):
    """A tensor of the wrong element type (float16 zero points where packed int32 are expected)."""

    code = "dtype_mismatch"


class ShapeError(Error):
    """A tensor of the wrong rank or extent, or a shape that does not divide (K % group_size)."""

    code = "shape_mismatch"


class LayoutError(Error):
    """Wrong packing or layout tag, or a non-contiguous tensor where contiguity is required."""

    code = "layout_mismatch"


class AlignmentError(Error):
    """A pointer or stride not aligned as the kernel requires."""

    code = "alignment"


class UnsupportedError(Error):
    """A valid configuration that no (chosen) kernel implements; the message lists each reason."""

    code = "unsupported"


class HostReleasedError(UnsupportedError):
    """A call on a QuantizedLinear whose host copy drop_host() released that needs those tensors (a binding not
    made before, tensors(), unpack(), ...). Raised by the Python layer only (no C++ code)."""


class FormatError(Error):
    """A checkpoint or file that breaks its format's rules."""

    code = "format_error"


class FileError(Error):
    """The operating system refused (open, mmap, write)."""

    code = "io_error"


class NotFoundError(Error, LookupError):
    """A named tensor, layer, file or kernel that does not exist."""

    code = "not_found"


class CudaError(Error, RuntimeError):
    """The CUDA runtime or a CUDA library reported a failure."""

    code = "cuda_error"


class InternalError(Error, RuntimeError):
    """A broken invariant of the library: a bug, please report it."""

    code = "internal"


# C++ ErrorCode name -> class; handed to the extension by the package's __init__.
BY_CODE = {
    cls.code: cls
    for cls in (
        ArgumentError,
        DTypeError,
        ShapeError,
        LayoutError,
        AlignmentError,
        UnsupportedError,
        FormatError,
        FileError,
        NotFoundError,
        CudaError,
        InternalError,
    )
}


def fail(cls: type[Error], arg: str, expected: str, got: str) -> Error:
    """An error in the library's own wording: ``<arg>: expected <expected>, got <got>``."""
    return cls(f"{arg}: expected {expected}, got {got}")
