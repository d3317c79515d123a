"""In-place ops eager runs and Thunder 0.2.6 does not trace: ``fill_``, and a ``copy_`` whose
source broadcasts.

Thunder 0.2.6 has no ``Tensor.fill_`` or ``torch.fill_`` ("Unknown attribute fill_"), and its
``copy_`` wants the source in the destination's shape ("Shapes were expected to be the same"),
where eager broadcasts the source (``x[1:].copy_(row)``, ``buf.copy_(mean)``) and takes
``non_blocking=``. These programs failed in Thunder's tracing, before the fusion pass.

The executor lends Thunder's interpreter a lookaside for each (``thunder.extend.Executor``'s
``_lookasides``, which ``thunder.jit`` reads from every executor it is given), so they are
traced only where ``fusion_alias.executor`` is in the executor list: plain ``thunder.jit`` is
left as it is.

Note [fill_ and copy_ as the ops Thunder has]
---------------------------------------------
Each traces as one composite bound symbol named as eager's op, made of ops Thunder has, so the
trace reads as the program and the refusal checks find the user's op by its name::

    x.fill_(1.5)            ->  fill_(x, 1.5)  = copy_(x, full_like(x, 1.5))
    x.fill_(s)  (0-dim s)   ->  fill_(x, s)    = copy_(x, expand(clone(s), x.shape))
    x[1:].copy_(row)        ->  copy_(x[1:], expand(row, (2, 4)))

* ``fill_`` with a tensor value reads it as a number first, as eager does, so ``x.fill_(x[0, 0])``
  is fine in eager (the value is read before any element is written). The ``clone`` keeps that
  order: the write's source is new memory, not a view of what it writes (a plain ``expand`` of
  ``x[0, 0]`` would be an operand that overlaps the destination, which ``copy_`` rejects).
* the value is cast to the destination's dtype by ``copy_`` (``zeros(3, dtype=int64).fill_(2.7)``
  is 2, as in eager);
* a ``copy_`` source that does not broadcast to the destination gets eager's message, and a
  source that is not a tensor (``x.copy_(2.0)``, which eager runs) is a fill.
"""

from __future__ import annotations

from functools import partial
from numbers import Number

import torch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol
import thunder.torch as ltorch


def _broadcast_source(dst: TensorProxy, src: TensorProxy) -> TensorProxy:
    """``src`` expanded to ``dst``'s shape, as eager's ``copy_`` broadcasts it; eager's errors when it does not."""
    src_shape, dst_shape = tuple(src.shape), tuple(dst.shape)
    if src_shape == dst_shape:
        return src
    if len(src_shape) > len(dst_shape):
        raise RuntimeError(f"output with shape {list(dst_shape)} doesn't match the broadcast shape "
                           f"{list(torch.broadcast_shapes(src_shape, dst_shape))}")
    for dim, (s, d) in enumerate(zip(reversed(src_shape), reversed(dst_shape))):
        if s != d and s != 1:
            position = len(dst_shape) - 1 - dim
            raise RuntimeError(f"The size of tensor a ({d}) must match the size of tensor b ({s}) "
                               f"at non-singleton dimension {position}")
    return ltorch.expand(src, dst_shape)


# a number's kind, and a dtype's: bool < integer < floating < complex
def _number_kind(value: Number) -> int:
    return 0 if isinstance(value, bool) else 1 if isinstance(value, int) else 2 if isinstance(value, float) else 3


def _dtype_kind(dtype) -> int:
    if dtypes.is_boolean_dtype(dtype):
        return 0
    if dtypes.is_nonboolean_integer_dtype(dtype):
        return 1
    return 3 if dtypes.is_complex_dtype(dtype) else 2


_WIDEST = (dtypes.bool8, dtypes.int64, dtypes.float64, dtypes.complex128)


def _fill_meta(a: TensorProxy, value, /) -> TensorProxy:
    if isinstance(value, TensorProxy):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        return ltorch.copy_(a, ltorch.expand(ltorch.clone(value), tuple(a.shape)))
    if not isinstance(value, Number):
        raise TypeError(f"fill_(): argument 'value' must be a Number or a 0-dim tensor, not {type(value).__name__}")
    kind = _number_kind(value)
    if kind <= _dtype_kind(a.dtype):
        return ltorch.copy_(a, ltorch.full_like(a, value))
    # a value of a wider kind than the destination (``int_tensor.fill_(2.7)``): made in its own
    # kind, then cast by copy_ as eager casts it (2)
    return ltorch.copy_(a, ltorch.full(tuple(a.shape), value, device=a.device, dtype=_WIDEST[kind]))


def _copy_meta(a: TensorProxy, src, /) -> TensorProxy:
    if not isinstance(src, TensorProxy):
        return _fill_meta(a, src)
    return ltorch.copy_(a, _broadcast_source(a, src))


fill_ = Symbol(name="fill_", meta=langctx(Languages.TORCH)(_fill_meta), id="fusion_alias.fill_")
copy_ = Symbol(name="copy_", meta=langctx(Languages.TORCH)(_copy_meta), id="fusion_alias.copy_")


def _tensor_fill_(a, value, /):
    return fill_(a, value)


def _tensor_copy_(a, src, non_blocking: bool = False):
    """``Tensor.copy_``: ``non_blocking`` changes when the copy runs, not what it writes."""
    if isinstance(src, TensorProxy) and tuple(src.shape) == tuple(a.shape):
        return ltorch.copy_(a, src)  # (Thunder's own, as plain thunder.jit traces it)
    return copy_(a, src)


_proxy_getattr = TensorProxy.__getattr__


def _getattr(self, attr: str, /):
    """``TensorProxy.__getattr__``, with the methods Thunder lacks: ``x.fill_`` is looked up on the
    proxy (Thunder's method table), before any call a lookaside could catch."""
    if attr == "fill_":
        return partial(_tensor_fill_, self)
    return _proxy_getattr(self, attr)


def register(executor) -> None:
    """Lend ``executor``'s lookasides for ``fill_`` and ``copy_`` to ``thunder.jit``'s interpreter."""
    executor._lookasides[torch.Tensor.fill_] = _tensor_fill_
    executor._lookasides[torch.fill_] = _tensor_fill_
    executor._lookasides[torch.Tensor.copy_] = _tensor_copy_
    executor._lookasides[ltorch.copy_] = _tensor_copy_  # (``x.copy_`` resolves to Thunder's symbol on the proxy)
    executor._lookasides[_proxy_getattr] = _getattr
