"""Ops whose result Thunder gives as the input itself, where eager makes a new tensor.

Note [results Thunder returns as their input]
---------------------------------------------
Thunder 0.2.6 traces ``floor``, ``ceil``, ``round`` and ``trunc`` of an integer tensor, and
``flip`` over no dimensions, as the input proxy itself: no new tensor. Eager returns a copy. So a
later write into the input showed in the result, silently (plain ``thunder.jit`` too; fuzz seed 20830
#127, ``dtype`` generator)::

    def f(a):                 # a: int32
        r = a.floor()         # eager: a copy of a
        a.zero_()
        return r              # eager: a's values before the write; Thunder: zeros

(Thunder's symbol returns ``prims.shallow_copy(a)``, which is a view of ``a``, as it is for the ops whose
eager result is ``a`` itself.) Here those calls trace as ``clone(a)``, so the result has its own memory, as
eager's has; every other call is Thunder's own. ``torch.fix`` traces as ``trunc``'s copy
already; views (``a.view_as(a)``, ``expand`` to the same shape) and ``a.to(a.dtype)``, ``a.contiguous()``
are eager's aliases too and stay so.
"""

from __future__ import annotations

import torch
from thunder.core import dtypes
from thunder.core.proxies import TensorProxy
import thunder.torch as ltorch

from fusion_alias.wrapped_lookasides import wrap_lookasides

_FUNCTIONS = (torch.floor, torch.ceil, torch.round, torch.trunc, torch.flip)  # (and their Tensor methods)


def _rounding(previous):
    def traced(a, *args, **kwargs):
        exact = isinstance(a, TensorProxy) and dtypes.is_exact_dtype(a.dtype) and not dtypes.is_boolean_dtype(a.dtype)
        if exact and not args and not kwargs:  # (of a bool eager raises, as Thunder's symbol does)
            return ltorch.clone(a)
        return previous(a, *args, **kwargs)

    return traced


def _flip(previous):
    def traced(a, *dims, **kwargs):
        given = kwargs.get("dims", dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)
        if isinstance(a, TensorProxy) and len(tuple(given)) == 0 and set(kwargs) <= {"dims"}:
            return ltorch.clone(a)
        return previous(a, *dims, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [results Thunder returns as their input]."""
    for fn in _FUNCTIONS:
        method = getattr(torch.Tensor, fn.__name__)
        wrap_lookasides(executor, fn, _flip if fn is torch.flip else _rounding, method, with_symbol=True)
