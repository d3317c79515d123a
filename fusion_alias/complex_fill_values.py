"""A Python complex number filled into a tensor that is not complex: eager's conversion, or eager's error.

Note [a complex fill value of a real tensor]
    ``fill_`` and ``masked_fill``/``masked_fill_`` convert their number to ``self``'s dtype with eager's
    overflow check (scalar_ranges.py, Note [a number eager converts to the op's dtype]). For a Python ``complex``
    and a floating or integer ``self`` that check fails where the imaginary part is not zero, and otherwise the
    real part is stored (the result keeps ``self``'s dtype); a bool ``self`` takes any number (nonzero is True)::

        x = torch.randn(2, 3)
        x.fill_(1j)                         # eager: "value cannot be converted to type float without overflow"
        x.masked_fill(x > 0, 2.5 + 1j)      # eager: the same error
        x.masked_fill(x > 0, 1 + 0j)        # eager: float32, 1.0 where x > 0
        x.long().masked_fill(m, 1 + 0j)     # eager: int64

    fusion_alias's ``fill_`` (inplace_lookasides.py) stored the real part of ``1j`` (0) and ran, Thunder's
    ``masked_fill`` promoted its result to complex64 (a silently wrong dtype, also for ``1 + 0j``: plain
    ``thunder.jit`` too) or, of an integer ``self``, failed in Python's ``int(1 + 0j)`` (session 36 hand probe:
    missed rejections and a wrong dtype). ``real_value`` gives these ops eager's number: the real part, or eager's
    error (also where the real part overflows the dtype, scalar_ranges' rule: ``nan + 0j`` into int64, where
    Thunder's ``masked_fill`` failed in Python's ``int(nan)``).
"""

from __future__ import annotations

import torch
from thunder.core.dtypes import is_boolean_dtype, is_complex_dtype, to_torch_dtype

from fusion_alias.scalar_ranges import overflows
from fusion_alias.wrapped_lookasides import wrap_lookasides

_NAMES = {torch.float16: "at::Half", torch.bfloat16: "at::BFloat16", torch.float32: "float", torch.float64: "double",
          torch.uint8: "uint8_t", torch.int8: "int8_t", torch.int16: "int16_t", torch.int32: "int", torch.int64: "int64_t"}


def real_value(a, value):
    """``value`` as eager converts it for a fill of ``a`` (module Note): a complex number's real part, or eager's
    error; any other value as it is."""
    if type(value) is not complex or is_complex_dtype(a.dtype) or is_boolean_dtype(a.dtype):
        return value
    dtype = to_torch_dtype(a.dtype)
    if value.imag != 0 or overflows(value.real, dtype):  # (nan + 0j into int64: Thunder's int() raised ValueError)
        raise RuntimeError(f"fusion_alias: value {value!r} cannot be converted to type {_NAMES.get(dtype, dtype)} "
                           "without overflow (eager PyTorch rejects this too)")
    return value.real


def _masked_fill(previous):
    def traced(a, mask, value):
        return previous(a, mask, real_value(a, value))

    return traced


def register(executor) -> None:
    """``masked_fill``/``masked_fill_`` take eager's number (``fill_``'s own lookaside calls ``real_value``)."""
    wrap_lookasides(executor, torch.masked_fill, _masked_fill, torch.Tensor.masked_fill, with_symbol=True)
    wrap_lookasides(executor, torch.Tensor.masked_fill_, _masked_fill, with_symbol=True)
