"""``x.max()`` and ``x.min()`` of a tensor holding NaN, with eager's gradient.

Note [the gradient of max() over a NaN]
---------------------------------------
Eager's ``x.max()`` / ``x.min()`` (all elements, no dim) is NaN when ``x`` holds one, and its gradient goes to the
NaN elements, shared evenly (``evenly_distribute_backward``: the mask is ``x.isnan()`` where the result is NaN,
``x == result`` otherwise). Thunder traces them as ``amax``/``amin``, whose rule shares the gradient over
``x == result``: no element equals NaN, so it divides by a count of zero and every element's gradient is NaN
(plain ``thunder.jit`` too; eager's ``x.amax()`` does that too, and stays as it is)::

    x = [nan, 1., 2., 0.]
    x.max()        # eager: x.grad [1, 0, 0, 0]; was: [nan, nan, nan, nan]

Here, for a floating ``x`` that requires grad with grad mode on, the result is built from two paths that give the
same value and eager's gradient: ``where(isnan(r), nan_path, amax(x with NaN as -inf))``. Without a NaN the second
is Thunder's own ``amax`` of ``x`` itself (its rule right there: ties shared, an infinite maximum too). With one,
the first: ``r + (s - s)``, ``r`` the detached result (NaN), ``s = sum(where(isnan(x), x, 0) * w)`` with ``w`` the
NaN mask over its count, whose gradient is ``w``; the second still gets its zero, now through an ``amax`` with a
maximum to share it over (a finite count). ``min`` the same with +inf. The construction is one composite symbol
named as the op it stands for, so that a write into ``x`` after it is refused as eager's backward refuses it
(``max`` saves ``x``: refusals/saved_versions.py reads symbols by name).
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol

from fusion_alias import min_max
from fusion_alias.no_grad_writes import detached_view
from fusion_alias.wrapped_lookasides import wrap_lookasides
from fusion_alias.zero_gradient_ops import _requiring_grad


def _construction(reduce, fill: float):
    """The value of the module Note, from ``x`` (a floating tensor that requires grad)."""
    def meta(x):
        result = reduce(x, list(range(x.ndim)), False)
        nan = ltorch.isnan(x)
        clean = reduce(ltorch.where(nan, fill, x), list(range(x.ndim)), False)
        mask = ltorch.to(nan, x.dtype)
        weights = mask / ltorch.sum(mask)  # (a NaN present: a count of one or more)
        s = ltorch.sum(ltorch.where(nan, x, 0.0) * weights)
        r = detached_view(result)
        nan_path = r + (s - detached_view(s))
        return ltorch.where(ltorch.isnan(r), nan_path, ltorch.to(clean, result.dtype))

    return meta


# one composite symbol per op, named as the symbol it stands for (``torch_max``, ``amin``), so that what reads the
# trace by name sees that op (refusals/saved_versions.py: ``m = x.max(); x.mul_(2)`` is refused as eager's backward
# raises; its subsymbols alone save nothing of ``x``)
_SYMBOLS = {name: Symbol(name=name, meta=langctx(Languages.TORCH)(_construction(reduce, fill)),
                         id=f"fusion_alias.nan_{name}")
            for name, reduce, fill in (("torch_max", ltorch.amax, float("-inf")), ("amin", ltorch.amin, float("inf")))}


def _with_eager_gradient(name: str):
    def wrap(previous):
        def traced(*args, **kwargs):
            x = args[0] if args else kwargs.get("input")
            rest = [*args[1:], *(v for k, v in kwargs.items() if k != "input")]  # (the method passes dim=None, False)
            if (any(v is not None and v is not False for v in rest) or not isinstance(x, TensorProxy)
                    or not dtypes.is_inexact_dtype(x.dtype) or dtypes.is_complex_dtype(x.dtype)
                    or x.numel == 0 or not _requiring_grad([x])):
                return previous(*args, **kwargs)
            return _SYMBOLS[name](x)

        return traced

    return wrap


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note, over what was lent before; and the methods
    (``x.max()``, which return_types.py traces with min_max.py's symbol, looked up at each call) the same."""
    for name, traced_as in (("max", "torch_max"), ("min", "amin")):
        wrap = _with_eager_gradient(traced_as)
        fn = getattr(torch, name)
        if ltorch._torch_to_thunder_function_map.get(fn) is None and fn in executor._lookasides:  # (torch.min: Thunder
            executor._lookasides[fn] = wrap(executor._lookasides[fn])  # has none; return_types.py lends its own)
        wrap_lookasides(executor, fn, wrap, getattr(torch.Tensor, name), with_symbol=True)
        if not getattr(min_max.SYMBOLS[name], "_nan_extrema", False):
            traced = min_max.SYMBOLS[name] = wrap(min_max.SYMBOLS[name])
            traced._nan_extrema = True
            executor._lookasides[traced] = traced  # (run as a lookaside, on proxies, not by the interpreter)
