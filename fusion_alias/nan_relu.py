"""``relu`` of NaN, as eager's.

Note [relu of NaN]
------------------
Thunder 0.2.6 decomposes ``relu(a)`` as ``where(a > 0, a, 0)``. ``NaN > 0`` is False, so a fused
region returned 0 where eager returns NaN (its ``relu`` is ``clamp_min(a, 0)``, which keeps NaN)::

    torch.relu(torch.tensor([nan, -1.0, 2.0]))   # eager [nan, 0, 2]; a fused region [0, 0, 2]

Plain ``thunder.jit`` on a CPU runs torch's ``relu`` and keeps the NaN; fusion_alias fused it and hid
the NaN a user looks for when a loss goes bad, silently (session 30 sweep of special values). Here
``relu`` is traced as ``where(a <= 0, 0, a)``: NaN fails the test and is kept, every other value is
Thunder's (``relu(-0.0)`` is ``0.0``, as eager's), and the gradient Thunder derives,
``where(a <= 0, 0, g)``, is eager's ``threshold_backward``, which passes ``g`` at a NaN as well.
``torch.relu``, ``F.relu`` (also with ``inplace=True``), ``nn.ReLU``, ``x.relu()``, ``x.relu_()`` and
``F.relu_`` are traced so; an input that is not floating is Thunder's own.
"""

from __future__ import annotations

import torch
from thunder.core.langctxs import Languages, langctx
from thunder.core.symbol import Symbol
import thunder.torch as ltorch

from fusion_alias.saturated_sigmoid import _REAL  # (the floating dtypes these lookasides trace)
from fusion_alias.wrapped_lookasides import wrap_lookasides



def _relu(a, inplace: bool = False):
    out = ltorch.where(ltorch.le(a, 0), 0, a)
    return ltorch._copy_(a, out) if inplace else out


relu = Symbol(name="relu", meta=langctx(Languages.TORCH)(_relu), id="fusion_alias.relu")


def _lookaside(previous):
    def traced(a, *args, **kwargs):
        if getattr(a, "dtype", None) in _REAL and len(args) + len(kwargs) <= 1 and set(kwargs) <= {"inplace"}:
            return relu(a, *args, **kwargs)
        return previous(a, *args, **kwargs)

    return traced


def _inplace_lookaside(previous):
    def traced(a, *args, **kwargs):
        if getattr(a, "dtype", None) in _REAL and not args and not kwargs:
            return relu(a, True)  # (one symbol that writes ``a``, as ``F.relu(a, inplace=True)`` is)
        return previous(a, *args, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [relu of NaN]."""
    wrap_lookasides(executor, torch.relu, _lookaside, torch.nn.functional.relu, with_symbol=True)
    wrap_lookasides(executor, torch.relu_, _inplace_lookaside, torch.nn.functional.relu_, with_symbol=True)
