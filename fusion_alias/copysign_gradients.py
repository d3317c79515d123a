"""``copysign`` and ``copysign_`` of tensors that require grad, with eager's gradient formula.

Note [copysign's gradient, eager's formula]
-------------------------------------------
Eager differentiates ``r = copysign(a, b)`` as (``derivatives.yaml``)::

    a: g * (r / a), 0 where a == 0          b: zeros_like(b)

Thunder 0.2.6 decomposes it as ``where(signbit(b), -abs(a), abs(a))`` and differentiates that: ``g * sign(a)``
for ``a`` (the same for a finite ``a``; ``+-g`` where eager's ``r / a`` is ``inf / inf`` = NaN at ``a = +-inf``),
nothing for ``b`` (``signbit`` is a constant to it: zero_gradient_ops.py joined a zero path in). The in-place
``x.copysign_(y)`` is Thunder's out-of-place symbol copied into ``x`` inside its own symbol, out of any
lookaside's reach, so ``y`` got ``grad`` None where eager's is zeros (NaN behind an infinite partial, as
zero_gradient_ops.py's Note tells)::

    def f(x, y):                        # x = [inf, -2.], y = [1., -1.], both reached from leaves
        x.copysign_(y)
        return x
    # eager: x's leaf grad [nan, -g1], y's leaf grad [0., 0.]; was [g0, -g1] and None

Here ``copysign`` is a symbol named as the op (what reads the trace by name still sees it: saved_versions.py's
saves, dtype_rules.py's result type), with Thunder's value and eager's rule lent to Thunder's autodiff; the
operands' gradients are summed to their shapes where they broadcast. ``copysign_`` is ``copy_(x, copysign(x,
y))`` as Thunder's, in a symbol named ``copysign_`` with ``x`` and ``y`` as its arguments, so that the operand
checks of in-place ops (refusals/operands.py) still read it. Only where a real floating operand requires grad,
with grad mode on; every other call traces as before. ``b``'s zeros are made from ``g`` (eager_gradients.py,
Note [a zero gradient made in backward]).
"""

from __future__ import annotations

from numbers import Number

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol
from thunder.core.transforms import get_grad, put_grad, register_grad, sum_to

from fusion_alias.eager_gradients import _zeros_from
from fusion_alias.wrapped_lookasides import wrap_lookasides
from fusion_alias.zero_gradient_ops import _requiring_grad


def _copysign(a, b):
    return ltorch.copysign(a, b)


copysign = Symbol(name="copysign", meta=langctx(Languages.TORCH)(_copysign), id="fusion_alias.copysign")


def _copysign_in_place(a, b):
    return ltorch._copy_(a, copysign(a, b))


copysign_ = Symbol(name="copysign_", meta=langctx(Languages.TORCH)(_copysign_in_place), id="fusion_alias.copysign_")


def _copysign_grad(a, b):
    result = ltorch.copysign(a, b)
    g = get_grad(result)
    ratio = ltorch.where(ltorch.eq(a, 0), 0.0, ltorch.true_divide(result, a))  # (eager's masked_fill(self == 0, 0))
    put_grad(a, sum_to(g * ratio, a.shape))
    if isinstance(b, TensorProxy):
        put_grad(b, ltorch.to(sum_to(_zeros_from(g), b.shape), b.dtype))  # (b may be of another dtype than g)
    return result


register_grad(copysign.id, _copysign_grad)


def _real_float(x) -> bool:
    return isinstance(x, TensorProxy) and dtypes.is_float_dtype(x.dtype) and not dtypes.is_complex_dtype(x.dtype)


def _ours(a, b) -> bool:
    """Whether ``copysign(a, b)`` is traced as the module Note says."""
    return (_real_float(a) and (_real_float(b) or isinstance(b, Number) and not isinstance(b, (bool, complex)))
            and bool(_requiring_grad([a, b])))


def _lookaside(symbol):
    def wrap(previous):
        def traced(*args, **kwargs):
            if len(args) == 2 and not kwargs and _ours(*args):
                return symbol(*args)
            if len(args) == 1 and set(kwargs) == {"other"} and _ours(args[0], kwargs["other"]):
                return symbol(args[0], kwargs["other"])
            return previous(*args, **kwargs)

        return traced

    return wrap


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note, over what was lent before for each."""
    wrap_lookasides(executor, torch.copysign, _lookaside(copysign), torch.Tensor.copysign, with_symbol=True)
    wrap_lookasides(executor, torch.Tensor.copysign_, _lookaside(copysign_), with_symbol=True)
