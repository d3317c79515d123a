"""``nan_to_num`` and ``sigmoid`` with eager's gradient formulas: the cotangent times a partial that may be zero.

Note [a cotangent times a zero partial stays NaN]
-------------------------------------------------
Eager's backward of some ops multiplies the incoming gradient by a partial that is zero at some elements, where
Thunder 0.2.6 differentiates a decomposition that *selects* (``where``). The two agree while the gradient is
finite; where it is NaN or infinite, eager's product is NaN (``nan * 0``, ``inf * 0``) and the selection is 0::

    nan_to_num(x)   eager: g * isfinite(x)          Thunder: where(x != x, 0, where(x == inf, ..., g))
    sigmoid(x)      eager: g * (1 - y) * y          here: where(x < -T, 0, ...) (saturated_sigmoid.py)

A NaN or infinite gradient reaches such an element in real programs: a zero gradient meets an infinite partial
behind it (fuzz ``fresh --special-values --grad`` seed 70019 #49, plain ``thunder.jit`` too)::

    def f(x0):                                  # x0 = [1., inf, 2.]
        b = x0[1:]
        b.nan_to_num_()                         # inf -> 3.4e38
        return torch.bernoulli(torch.sigmoid(x0.exp()))
    # bernoulli's zero gradient times exp(3.4e38) = inf is NaN at that element; nan_to_num's backward:
    # eager NaN * isfinite(inf) = NaN * 0 = NaN; was 0

and ``x.sigmoid().logit()`` at ``x = -inf``: ``logit``'s backward at ``y = 0`` is ``g / 0 = inf``, and eager's
``sigmoid`` backward ``inf * (1 - 0) * 0`` is NaN where the saturating ``where`` gave 0.

So each is a symbol named as the op, whose value is the one traced before (Thunder's ``nan_to_num``, the
saturating ``sigmoid``) and whose gradient rule, lent to Thunder's autodiff, is eager's formula. ``sigmoid``'s
rounds each product to float16 or bfloat16 for those, as eager's CPU kernel does (one ulp apart otherwise), and
no longer goes through ``exp`` at all, so an overflowing ``exp(-x)`` meets no gradient either. ``x.nan_to_num_()`` is the same value written back
(inplace_lookasides.py). A call with ``out=``, or of a complex or integer tensor, traces as before.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol
from thunder.core.transforms import get_grad, put_grad, register_grad

from fusion_alias import saturated_sigmoid
from fusion_alias.wrapped_lookasides import wrap_lookasides

_REAL = (dtypes.float64, dtypes.float32, dtypes.float16, dtypes.bfloat16)


def _nan_to_num(a, nan=0.0, posinf=None, neginf=None):
    return ltorch.nan_to_num(a, nan, posinf, neginf)


nan_to_num = Symbol(name="nan_to_num", meta=langctx(Languages.TORCH)(_nan_to_num), id="fusion_alias.nan_to_num")


def _nan_to_num_grad(a, nan=0.0, posinf=None, neginf=None):
    result = ltorch.nan_to_num(a, nan, posinf, neginf)
    g = get_grad(result)
    put_grad(a, g * ltorch.to(ltorch.isfinite(a), g.dtype))  # (eager's ``grad * isfinite(self)``)
    return result


def _sigmoid_grad(a):
    y = saturated_sigmoid.sigmoid(a)
    g = get_grad(y)
    put_grad(a, g * (1.0 - y) * y)  # (eager's ``sigmoid_backward``, each product rounded to the halves' dtype too)
    return y


register_grad(nan_to_num.id, _nan_to_num_grad)
register_grad(saturated_sigmoid.sigmoid.id, _sigmoid_grad)


def _nan_to_num_lookaside(previous):
    def traced(a, *args, **kwargs):
        if "out" in kwargs or not isinstance(a, TensorProxy) or a.dtype not in _REAL or len(args) > 3 or set(
                kwargs) - {"nan", "posinf", "neginf"}:
            return previous(a, *args, **kwargs)
        values = dict(zip(("nan", "posinf", "neginf"), args), **kwargs)
        nan = values.get("nan")
        return nan_to_num(a, 0.0 if nan is None else nan, values.get("posinf"), values.get("neginf"))

    return traced


def as_traced(name: str):
    """What ``Tensor.<name>`` is traced as here (``nan_to_num``), for the in-place form inplace_lookasides.py makes
    (``x.nan_to_num_()``), or None."""
    if name != "nan_to_num":
        return None
    return _nan_to_num_lookaside(ltorch.nan_to_num)


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note (``sigmoid``'s symbol is saturated_sigmoid.py's)."""
    wrap_lookasides(executor, torch.nan_to_num, _nan_to_num_lookaside, torch.Tensor.nan_to_num, with_symbol=True)
