"""``sigmoid`` of a large negative value, with eager's gradient.

Note [sigmoid where exp overflows]
----------------------------------
Thunder 0.2.6 decomposes ``sigmoid(a)`` as ``reciprocal(1 + exp(-a))``. Where ``exp(-a)`` overflows
(``a < -88.72`` in float32, and float16/bfloat16 are computed in float32; ``a < -709.78`` in float64), the
value is 0, as eager's, but the gradient is ``0 * exp(-a) = 0 * inf = NaN`` where eager's is
``y * (1 - y) = 0``, silently (plain ``thunder.jit`` too). Masked logits (``masked_fill(mask, -1e4)``
before a sigmoid gate) hit it::

    a = torch.tensor([-1e4, 0.0], requires_grad=True)
    a.sigmoid().sum().backward()      # eager a.grad [0, 0.25]; Thunder [nan, 0.25]

Here the exponent is kept finite and the overflowing elements are set to 0 by a ``where``::

    y = where(a < -T, 0, reciprocal(1 + exp(-where(a < -T, -T, a))))

with ``T`` the largest value whose ``exp`` is finite in the computation dtype, so every value is
Thunder's (and eager's: ``1 / (1 + inf)`` is 0), and no gradient meets an infinity. ``sigmoid``,
``torch.special.expit``, ``F.sigmoid``, ``nn.Sigmoid`` and ``x.sigmoid_()`` are traced so; a complex or
integer input is Thunder's own.
"""

from __future__ import annotations

import torch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.symbol import Symbol
import thunder.torch as ltorch

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _largest_finite_exponent(dtype: torch.dtype) -> float:
    """The largest ``x`` of ``dtype`` whose ``exp`` is finite there."""
    x = torch.tensor(torch.finfo(dtype).max, dtype=dtype).log()
    while torch.isinf(x.exp()):
        x = torch.nextafter(x, torch.zeros((), dtype=dtype))
    while not torch.isinf(torch.nextafter(x, torch.tensor(torch.inf, dtype=dtype)).exp()):
        x = torch.nextafter(x, torch.tensor(torch.inf, dtype=dtype))
    return float(x)


_LIMIT = {dtypes.float64: _largest_finite_exponent(torch.float64)}
_FLOAT32_LIMIT = _largest_finite_exponent(torch.float32)  # (float32, and the halves computed in it)
_REAL = (dtypes.float64, dtypes.float32, dtypes.float16, dtypes.bfloat16)


def _sigmoid(a):
    limit = _LIMIT.get(a.dtype, _FLOAT32_LIMIT)
    computed = a if a.dtype in (dtypes.float64, dtypes.float32) else ltorch.to(a, dtypes.float32)
    overflows = ltorch.lt(computed, -limit)
    finite = ltorch.where(overflows, -limit, computed)
    y = ltorch.where(overflows, 0.0, ltorch.reciprocal(ltorch.add(1.0, ltorch.exp(ltorch.neg(finite)))))
    return y if y.dtype == a.dtype else ltorch.to(y, a.dtype)


sigmoid = Symbol(name="sigmoid", meta=langctx(Languages.TORCH)(_sigmoid), id="fusion_alias.sigmoid")


def _lookaside(previous):
    def traced(a, *args, **kwargs):
        if not args and not kwargs and getattr(a, "dtype", None) in _REAL:
            return sigmoid(a)
        return previous(a, *args, **kwargs)

    return traced


def as_traced(name: str):
    """What ``Tensor.<name>`` is traced as here (``sigmoid``), for the in-place form inplace_lookasides.py makes
    (``x.sigmoid_()``), or None."""
    if name != "sigmoid":
        return None
    return _lookaside(ltorch.sigmoid)


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [sigmoid where exp overflows]."""
    wrap_lookasides(executor, torch.sigmoid, _lookaside, torch.special.expit, torch.nn.functional.sigmoid,
                    with_symbol=True)
