"""``bernoulli``'s probabilities checked at run time, as eager checks them.

Note [bernoulli of a probability outside [0, 1]]
------------------------------------------------
Eager's ``torch.bernoulli(p)`` raises "Expected p_in >= 0 && p_in <= 1 to be true, but got false" when an element
of ``p`` is NaN or outside [0, 1]. Thunder 0.2.6 traces it as ``(uniform_like(p) < p).to(p.dtype)``, which takes
NaN for 0 and anything above 1 for 1: the call returned where eager raises (plain ``thunder.jit`` too)::

    def f(x):                                     # x holds NaN (fuzz --special-values)
        return torch.bernoulli(torch.sigmoid(x))  # eager raises; was: a tensor

The check depends on the values, so it runs with them: ``ok = (p >= 0) & (p <= 1)`` goes through an op of
Thunder's torch executor (``_check``, which raises eager's words unless every element is true and returns a copy
of ``ok``), and the draw's result is ``where(checked, r, r)``: the same values, the same gradient (``ok`` is
bool, a constant for the autodiff), and an edge that keeps the check alive and before the result's uses. The op
runs outside fusion regions (fusion_alias claims no op it does not know), like the draw itself.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core.proxies import TensorProxy
from thunder.executors.torchex import ex as _torch_ex

_MESSAGE = ("fusion_alias: bernoulli's probabilities must be in [0, 1], and one is NaN or outside it (eager PyTorch "
            "raises: Expected p_in >= 0 && p_in <= 1 to be true, but got false)")


def _check(ok: torch.Tensor) -> torch.Tensor:
    if not bool(ok.all()):
        raise RuntimeError(_MESSAGE)
    return ok.clone()


_CHECK = _torch_ex.register_operator("fusion_alias_check_probabilities", meta=lambda ok: TensorProxy(like=ok),
                                     fn=_check)
_torch_ex.register_implementation(_CHECK, _CHECK, checker=lambda *args, **kwargs: True)


def checked_draw(result, p):
    """``result``, the draw from probabilities ``p``, made to follow the run-time check of the module Note."""
    if not isinstance(result, TensorProxy) or not isinstance(p, TensorProxy):
        return result
    ok = ltorch.logical_and(ltorch.ge(p, 0), ltorch.le(p, 1))
    return ltorch.where(_CHECK(ok), result, result)
