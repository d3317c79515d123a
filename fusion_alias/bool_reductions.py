"""``sum``/``prod`` with ``dtype=torch.bool`` inside a compiled function, as eager computes them.

Note [a sum in bool is any]
---------------------------
Eager's ``x.sum(dtype=torch.bool)`` converts ``x`` to bool and reduces in bool: a logical or (``x.prod(dtype=
torch.bool)``: a logical and), a bool result. Thunder 0.2.6 traces it as ``prims.sum`` of the bool tensor, and
fusion_alias computes that sum as a count (ops.py, Note [the dtype of an integer sum]: Thunder's own
decompositions count with it), so the compiled function returned the int64 count where eager returns a bool,
silently (``tensor(3)`` for ``tensor(True)``; session 30 limit, found by the dtype fuzzing)::

    x.sum(1, dtype=torch.bool)      # eager: tensor([True, True]);  was: tensor([2, 1])

The lookasides here trace a reduction to bool as Thunder's ``any``/``all`` of ``x`` converted to bool (what
``torch.any``/``torch.all`` compute, with a bool result for every input dtype, uint8 too); any other dtype
goes to Thunder's ``sum``/``prod`` as before. Eager's ``sum`` over an empty list of dims reduces every dim,
and so does this one. Eager refuses the reduction of a tensor that requires grad with grad mode on ("Autograd
not support dtype: Bool"), and so does this one for a tensor of the call (Thunder's proxies of intermediate
values do not say whether they require grad: of those it runs, a missed rejection).
"""

from __future__ import annotations

from functools import partial

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.compile_data import get_compile_data

from fusion_alias.errors import out_refusal


def _to_bool(dtype) -> bool:
    return dtype is torch.bool or dtype is dtypes.bool8


def _grad_enabled() -> bool:
    cd = get_compile_data()  # (the grad mode where the program is traced: trace_time_queries.py)
    return torch.is_grad_enabled() if cd is None else bool(cd.is_grad_enabled)


def _reduced(which: str, a, dim=None, keepdim: bool = False, *, dtype=None, out=None):
    if out is not None:  # (out_arguments.py, Note [out= of other functions]; ``out=None`` is eager's default)
        raise out_refusal(which)
    if not _to_bool(dtype):
        symbol = ltorch.sum if which == "sum" else ltorch.prod
        return symbol(a, dim, keepdim, dtype=dtype)
    if getattr(a, "requires_grad", False) and _grad_enabled():
        raise RuntimeError(f"fusion_alias: {which}(dtype=torch.bool) of a tensor that requires grad, with grad mode "
                           "on: eager raises 'Autograd not support dtype: Bool'. Reduce a detached tensor")
    if which == "sum" and isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None  # (eager's sum over no dims reduces all of them)
    a = ltorch.to(a, torch.bool)
    symbol = ltorch.any_tensor if which == "sum" else ltorch.all_tensor
    return symbol(a, dim, keepdim)


def method(name: str, proxy):
    """The bound method ``proxy.sum``/``proxy.prod`` for ``inplace_lookasides._getattr``."""
    return partial(_reduced, name, proxy)


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [a sum in bool is any] for ``torch.sum``/``torch.prod`` (the
    ``Tensor`` methods go through ``inplace_lookasides._getattr``, which asks :func:`method`)."""
    for name in ("sum", "prod"):
        for fn in (getattr(torch, name), getattr(torch.Tensor, name)):
            if fn not in executor._lookasides:
                executor._lookasides[fn] = partial(_reduced, name)
