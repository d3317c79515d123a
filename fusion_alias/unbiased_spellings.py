"""Eager's ``unbiased`` spelling of ``var``, ``std``, ``var_mean`` and ``std_mean``, traced as Thunder's ``correction``.

Note [unbiased is a correction]
-------------------------------
Eager takes the same reduction in two spellings: ``x.var(dim, unbiased=False, keepdim=k)`` (positionally
``x.var(0, False)``, and ``x.var(False)`` over every dim) and ``x.var(dim, correction=0, keepdim=k)``, with
``unbiased=True`` meaning ``correction=1``. Thunder 0.2.6's symbols take the second only, so the first,
common in hand-written normalization layers, raised a TypeError in plain ``thunder.jit`` and here
(``var() got an unexpected keyword argument 'unbiased'``; ``x.var(0, False)``: "takes from 1 to 2 positional
arguments"), where eager runs it. The lookaside below lets eager bind the call first, on a meta tensor of
the operand's shape and dtype, so that a call eager refuses is refused with eager's own TypeError
(``unbiased`` and ``correction`` together, ``x.var(False, keepdim=True)``, a non-bool ``unbiased``); where
the call names ``unbiased``, it calls Thunder's symbol with the correction it means. Example::

    x.var(0, False, True)                ->  ltorch.var(x, 0, keepdim=True, correction=0)
    torch.var_mean(x, unbiased=True)     ->  ltorch.var_mean(x, None, keepdim=False, correction=1)

Every other call goes to Thunder's symbol unchanged. ``x.var``/``x.std`` reach the lookaside through
``inplace_lookasides._getattr``, as ``torch.var(x, ...)``.
"""

from __future__ import annotations

from functools import partial

import torch
import thunder.torch as ltorch
from thunder.core.proxies import TensorProxy

from fusion_alias.eager_keywords import meta_of
from fusion_alias.wrapped_lookasides import wrap_lookasides

FUNCTIONS = (torch.var, torch.std, torch.var_mean, torch.std_mean)
METHODS = frozenset({"var", "std"})  # (``Tensor.var_mean`` and ``Tensor.std_mean`` do not exist)


def _as_correction(fn, previous, *args, **kwargs):
    """Note [unbiased is a correction]: ``fn(*args, **kwargs)`` as eager binds it, traced by ``previous``."""
    if not args and "input" in kwargs:  # (``torch.var(input=x, ...)``: eager's name of the operand)
        kwargs = dict(kwargs)
        args = (kwargs.pop("input"),)
    if not args:
        return previous(*args, **kwargs)
    a, args = args[0], args[1:]
    if not isinstance(a, TensorProxy) or not (len(args) > 1 or (args and type(args[0]) is bool) or "unbiased" in kwargs):
        return previous(a, *args, **kwargs)  # (no unbiased overload in reach: Thunder's own spelling)
    metas = meta_of(((a, *args), kwargs))
    if metas is not None:  # (else a number traced as a proxy: eager cannot be asked)
        fn(*metas[0], **metas[1])  # eager's binding, or its TypeError
    names = ("dim", "unbiased", "keepdim")
    if len(args) == 1 and type(args[0]) is bool:
        names = ("unbiased",)  # (``var(self, unbiased)``: every dim)
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if "unbiased" not in bound:
        return previous(a, *args, **kwargs)
    unbiased = bound.pop("unbiased")
    return previous(a, bound.pop("dim", None), keepdim=bound.pop("keepdim", False), correction=1 if unbiased else 0,
                    **bound)


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [unbiased is a correction], over those lent before."""
    for fn in FUNCTIONS:
        if ltorch._torch_to_thunder_function_map.get(fn) is not None:
            wrap_lookasides(executor, fn, lambda previous, fn=fn: partial(_as_correction, fn, previous))
