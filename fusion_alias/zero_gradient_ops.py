"""``bernoulli``, ``div(..., rounding_mode="floor")`` and ``copysign``'s sign operand: eager's zero gradients.

Note [ops whose eager gradient is zero]
---------------------------------------
Eager's autograd gives some ops of a tensor that requires grad a result that requires grad and a *zero* gradient
(``BernoulliBackward0``, ``DivBackward0`` with a rounding mode, ``CopysignBackward0`` for the sign operand).
Thunder 0.2.6 computes them with ops it takes as constants (``bernoulli`` is ``(uniform_like(p) < p).to(...)``,
a comparison; ``div`` with ``rounding_mode="floor"`` is ``floor_divide``; ``copysign`` reads its second operand
through ``signbit``), so the result required no grad and the leaves behind it got ``grad`` None.

A zero gradient is not always invisible: eager sends it on through the ops before, and their formulas multiply
it by their own partials, so a leaf behind an infinite partial gets NaN (``0 * inf``)::

    def f(a, b):                                    # a holds 1e5 (fuzz --special-values --grad seed 20962 #22)
        return torch.bernoulli(torch.sigmoid(a.exp()))
    # eager: exp's backward is grad * exp(a) = 0 * inf: a.grad NaN there, 0 elsewhere; was: None

Each such result is joined to a path that carries a zero gradient, as ``floor`` is (step_gradients.py, Note
[floor and ceil carry a zero gradient]): ``where(full_like(r, False), trunc(p), r)``, whose gradient to ``p`` is
zero and runs on through the ops before as eager's does. Only the operands eager differentiates are joined:
``bernoulli``'s probabilities, both operands of a floor ``div``. ``torch.div(x, y, rounding_mode="trunc")`` was
right already (``trunc`` carries a zero gradient: eager_gradients.py). ``copysign``'s sign operand is now given its
zeros by a gradient rule of its own (copysign_gradients.py, Note [copysign's gradient, eager's formula]).

Note [a floor div_ in place, joined inside its own symbol]
----------------------------------------------------------
The in-place ``x.div_(y, rounding_mode="floor")`` (and ``"trunc"``) is Thunder's out-of-place symbol copied into
``x`` inside its own symbol, out of any lookaside's reach: ``y`` got ``grad`` None where eager's is zeros (NaN
behind an infinite partial). Traced as ``x.copy_(joined value)`` it would lose what is checked on the in-place op itself
(``t2.div_(t2[0], ...)``, eager's "refer to a single memory location", layout --grad 35058 #47), so it is a symbol
named ``div_``, with ``x``, ``y`` and the rounding mode as its arguments, that copies the joined value into ``x``.

Thunder's floor division is not a constant everywhere: it keeps ``where(b == 0, a / b, ...)``, so a gradient ran
through ``a / b``, ``0 * inf`` NaN where ``a`` is infinite (``x.exp().div(y, rounding_mode="floor")``); eager's is
zero everywhere. Its value is taken alone (a detached view) before it is joined. ``bernoulli(p, 0.5)`` takes no
float probability in Thunder (a TypeError, where eager's backward raises "derivative for aten::bernoulli is not
implemented"): loud both ways, left.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol

from fusion_alias.no_grad_writes import detached_view
from fusion_alias.probability_checks import checked_draw
from fusion_alias.traced_grad_mode import traced_grad_enabled
from fusion_alias.wrapped_lookasides import wrap_lookasides


def _requiring_grad(operands) -> list:
    """The floating tensor operands that require grad where they are read, with grad mode on (as step_gradients')."""
    from fusion_alias.bool_reductions import _requires_grad

    if not traced_grad_enabled():
        return []
    return [a for a in operands if isinstance(a, TensorProxy) and dtypes.is_inexact_dtype(a.dtype) and _requires_grad(a)]


def _joined(result, operands):
    """``result`` joined to a zero-gradient path from each of ``operands`` that requires grad (module Note)."""
    if not isinstance(result, TensorProxy) or not dtypes.is_inexact_dtype(result.dtype):
        return result
    for a in _requiring_grad(operands):
        never = ltorch.full_like(result, False, dtype=torch.bool)
        result = ltorch.where(never, ltorch.to(ltorch.trunc(a), result.dtype), result)
    return result


def _bernoulli(previous):
    def traced(*args, **kwargs):
        p = args[0] if args else kwargs.get("input")  # (probability_checks.py, Note [bernoulli of a probability
        return _joined(checked_draw(previous(*args, **kwargs), p), [p])  # outside [0, 1]])

    return traced


def _floor_div(previous):
    def traced(*args, **kwargs):
        result = previous(*args, **kwargs)
        operands = [*args[:2], kwargs.get("input"), kwargs.get("other")]
        if kwargs.get("rounding_mode") != "floor" or not _requiring_grad(operands):
            return result
        # (Thunder's floor division keeps ``where(b == 0, a / b, ...)``: a gradient through a / b, 0 * inf where
        # b is 0 or a is infinite; eager's is zero everywhere: the value alone, then joined)
        return _joined(detached_view(result), operands)

    return traced


def _rounded_div_in_place(a, b, *, rounding_mode=None):
    """Note [a floor div_ in place, joined inside its own symbol]."""
    value = detached_view(ltorch.div(a, b, rounding_mode=rounding_mode))  # (the value alone, as _floor_div's)
    never = ltorch.full_like(value, False, dtype=torch.bool)
    for x in (a, b):
        if isinstance(x, TensorProxy) and dtypes.is_inexact_dtype(x.dtype):
            value = ltorch.where(never, ltorch.to(ltorch.trunc(x), value.dtype), value)
    return ltorch._copy_(a, value)


rounded_div_ = Symbol(name="div_", meta=langctx(Languages.TORCH)(_rounded_div_in_place), id="fusion_alias.rounded_div_")


def _rounded_div_(previous):
    def traced(*args, **kwargs):
        if len(args) != 2 or set(kwargs) != {"rounding_mode"} or kwargs["rounding_mode"] not in ("floor", "trunc"):
            return previous(*args, **kwargs)
        a, b = args
        if (not isinstance(a, TensorProxy) or not dtypes.is_float_dtype(a.dtype) or dtypes.is_complex_dtype(a.dtype)
                or not _requiring_grad([a, b])):
            return previous(*args, **kwargs)
        return rounded_div_(a, b, rounding_mode=kwargs["rounding_mode"])

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note, over what was lent before for each."""
    wrap_lookasides(executor, torch.bernoulli, _bernoulli, torch.Tensor.bernoulli, with_symbol=True)
    wrap_lookasides(executor, torch.div, _floor_div, torch.Tensor.div, with_symbol=True)
    wrap_lookasides(executor, torch.Tensor.div_, _rounded_div_, with_symbol=True)
