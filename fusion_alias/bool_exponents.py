"""``x ** mask`` of a floating ``x`` that requires grad, ``mask`` a bool tensor: eager raises at backward.

Note [a bool exponent has no derivative in eager]
-------------------------------------------------
Eager's ``pow_backward_self`` is ``grad * exponent * self.pow(exponent - 1)``; with a bool tensor as the
exponent, ``exponent - 1`` raises "Subtraction, the `-` operator, with a bool tensor is not supported" when the
backward reaches it::

    def f(a):                       # a requires grad (fuzz --grad --strict-backward seed 31500 #35, #102)
        return a ** (a > 0)         # eager: the forward runs, backward raises; was: a gradient [1., 0., ...]

Thunder 0.2.6 promotes the bool exponent to the base's dtype before ``prims.pow``, so its rule finds a float
exponent and hands back a gradient where eager has none. The raise is eager's at backward; fusion_alias makes it
when the call is traced with gradients (as for floor_divide, step_gradients.py, Note [floor_divide has no
derivative]): ``torch.pow``, ``Tensor.pow``, ``**``, ``pow_``, ``**=`` and ``torch._foreach_pow`` (one op per tensor,
through the method). An integer exponent (``a ** mask.int()``), ``float_power`` and a bool *base*
(``mask ** a``) have eager derivatives and are left alone; so is a base that requires no grad.
"""

from __future__ import annotations

import torch
from thunder.core import dtypes
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides
from fusion_alias.zero_gradient_ops import _requiring_grad


def _operands(args, kwargs) -> tuple:
    base = args[0] if args else kwargs.get("input", kwargs.get("self"))
    exponent = args[1] if len(args) > 1 else kwargs.get("exponent")
    return base, exponent


def check_exponent(base, exponent) -> None:
    """Raise eager's backward error where ``exponent`` is a bool tensor and ``base`` requires grad (module Note)."""
    if isinstance(exponent, TensorProxy) and exponent.dtype is dtypes.bool8 and _requiring_grad([base]):
        raise RuntimeError(
            "fusion_alias: Subtraction, the `-` operator, with a bool tensor is not supported: eager PyTorch raises "
            "this at backward for a tensor that requires grad raised to a bool tensor's power (pow's derivative "
            "computes exponent - 1). Convert the exponent first: x ** mask.to(x.dtype)")


def _checked(previous):
    def traced(*args, **kwargs):
        check_exponent(*_operands(args, kwargs))  # (before an in-place pow_ writes its base)
        return previous(*args, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the checks of the module Note, over what was lent before for each."""
    wrap_lookasides(executor, torch.pow, _checked, torch.Tensor.pow, with_symbol=True)
    wrap_lookasides(executor, torch.Tensor.pow_, _checked, with_symbol=True)
    for dunder in (TensorProxy.__pow__, TensorProxy.__ipow__):  # (**, **=)
        executor._lookasides[dunder] = _checked(executor._lookasides.get(dunder, dunder))
