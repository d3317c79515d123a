"""``hardsigmoid``, ``hardswish``, ``softshrink`` and ``rrelu`` (evaluation) with eager's gradient at a NaN element.

Note [a NaN element takes the branch eager's comparisons give it]
-----------------------------------------------------------------
Eager's backward of these activations picks a branch per element by comparisons of the input, and every
comparison with NaN is False, so a NaN element lands in a fixed branch (``hardsigmoid_backward``,
``hardswish_backward``, ``softshrink_backward``)::

    hardsigmoid   g / 6 where -3 < x < 3, else 0                 NaN x: 0
    hardswish     0 where x <= -3, g * (x / 3 + 1 / 2) where x < 3, else g      NaN x: g
    softshrink    0 where -l <= x <= l, else g                   NaN x: g
    rrelu (eval)  g where x > 0, else g * (lower + upper) / 2    NaN x: g * slope   (a leaky_relu's)

Thunder 0.2.6 differentiates its decompositions (``clamp(x / 6 + 0.5, 0, 1)``, ``x * relu6(x + 3) / 6``,
``where(abs(x) > l, x - sign(x) * l, x * 0)``), whose NaN element takes another branch, silently (plain
``thunder.jit`` too; found by session 43's sweep of the neighbours of ``g * isfinite(x)``)::

    x = torch.tensor([nan, 0.5], requires_grad=True)
    F.hardswish(x).sum().backward()    # eager x.grad [1., 0.6667]; Thunder [nan, 0.6667]
    F.hardsigmoid(x) ...               # eager [0., 0.1667]; Thunder [0.1667, 0.1667]
    F.softshrink(x) ...                # eager [1., 0.]; Thunder [0., 0.]

Each is a symbol named as the op (saved_versions.py reads what it saves by that name), with Thunder's value and
eager's rule, lent to Thunder's autodiff, written with eager's comparisons and products (``g * (1 / 6)``, as eager
multiplies). ``inplace=True`` and a complex or integer input trace as before: ``F.hardsigmoid(x, inplace=True)``
keeps Thunder's gradient at a NaN element (left: its in-place symbol is what the operand and saved-tensor checks
read).

``rrelu`` in evaluation mode needs no rule of its own: Thunder's ``where(x <= 0, x * slope, x)`` becomes
``where(x > 0, x, x * slope)``, the same values (a NaN stays NaN, ``-0.`` stays ``-0.``) with the NaN element on
eager's side, in symbols named ``rrelu`` and ``rrelu_`` with Thunder's arguments (``inplace=True`` too: fuzz ``fresh
--special-values --grad`` 70102 #32 was ``F.rrelu(a, 0.2, 0.2, training=False, inplace=True)``, ``g`` where eager's
is ``0.2 * g``). Training mode draws its slopes and was right (a NaN element's noise is 1 in eager too).
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol
from thunder.core.transforms import get_grad, put_grad, register_grad

from fusion_alias.dropout_checks import check_rrelu
from fusion_alias.wrapped_lookasides import wrap_lookasides


def _hardsigmoid_grad(a):
    result = ltorch.hardsigmoid(a)
    g = get_grad(result)
    inside = ltorch.logical_and(ltorch.gt(a, -3.0), ltorch.lt(a, 3.0))
    put_grad(a, ltorch.where(inside, g * (1.0 / 6.0), 0.0))
    return result


def _hardswish_grad(a):
    result = ltorch.hardswish(a)
    g = get_grad(result)
    halves = a.dtype in (dtypes.float16, dtypes.bfloat16)  # (eager's kernel computes them in float32, rounds once)
    g32, a32 = (ltorch.to(g, dtypes.float32), ltorch.to(a, dtypes.float32)) if halves else (g, a)
    middle = ltorch.where(ltorch.lt(a32, 3.0), g32 * (a32 / 3.0 + 0.5), g32)
    grad = ltorch.where(ltorch.le(a32, -3.0), 0.0, middle)
    put_grad(a, ltorch.to(grad, a.dtype) if halves else grad)
    return result


def _softshrink_grad(a, lambd=0.5):
    result = ltorch.softshrink(a, lambd)
    g = get_grad(result)
    inside = ltorch.logical_and(ltorch.ge(a, -lambd), ltorch.le(a, lambd))
    put_grad(a, ltorch.where(inside, 0.0, g))
    return result


def _symbol(name, thunder_symbol, grad):
    sym = Symbol(name=name, meta=langctx(Languages.TORCH)(lambda a, *args: thunder_symbol(a, *args)),
                 id=f"fusion_alias.{name}")
    register_grad(sym.id, grad)
    return sym


SYMBOLS = {
    "hardsigmoid": _symbol("hardsigmoid", ltorch.hardsigmoid, _hardsigmoid_grad),
    "hardswish": _symbol("hardswish", ltorch.hardswish, _hardswish_grad),
    "softshrink": _symbol("softshrink", ltorch.softshrink, _softshrink_grad),
}


def _rrelu_value(a, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    out = ltorch.where(ltorch.gt(a, 0), a, a * ((lower + upper) / 2))  # (eager's leaky_relu: x * negval)
    return ltorch._copy_(a, out) if inplace else out


def _rrelu_in_place(a, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return ltorch._copy_(a, _rrelu_value(a, lower, upper))


RRELU = {
    "rrelu": (Symbol(name="rrelu", meta=langctx(Languages.TORCH)(_rrelu_value), id="fusion_alias.rrelu"),
              ("lower", "upper", "training", "inplace")),
    "rrelu_": (Symbol(name="rrelu_", meta=langctx(Languages.TORCH)(_rrelu_in_place), id="fusion_alias.rrelu_"),
               ("lower", "upper", "training")),
}


def _rrelu_lookaside(name: str):
    symbol, params = RRELU[name]

    def wrap(previous):
        def traced(a, *args, **kwargs):
            values = dict(zip(params, args), **kwargs)
            numbers = all(isinstance(values.get(k, 0.5), (int, float)) and not isinstance(values.get(k), bool)
                          for k in ("lower", "upper"))
            if (len(args) > len(params) or set(kwargs) - set(params) or values.get("training", False) is not False
                    or not numbers or not isinstance(a, TensorProxy) or not dtypes.is_float_dtype(a.dtype)
                    or dtypes.is_complex_dtype(a.dtype) or not isinstance(values.get("inplace", False), bool)):
                return previous(a, *args, **kwargs)
            full = [values.get(k, d) for k, d in zip(params, (1.0 / 8, 1.0 / 3, False, False))]
            check_rrelu(a, *full[:3])  # (eager's argument checks, whichever of the two lookasides runs first)
            return symbol(a, *full)

        return traced

    return wrap


def _lookaside(name: str):
    def wrap(previous):
        def traced(a, *args, **kwargs):
            if name == "softshrink":
                rest = (*args, *kwargs.values()) if set(kwargs) <= {"lambd"} and len(args) + len(kwargs) <= 1 else None
            else:  # (``inplace=False`` only, by position or by name)
                rest = () if not any((*args, *kwargs.values())) and set(kwargs) <= {"inplace"} and len(args) <= 1 \
                    else None
            if rest is None or not isinstance(a, TensorProxy) or not dtypes.is_float_dtype(a.dtype) or (
                    dtypes.is_complex_dtype(a.dtype)):
                return previous(a, *args, **kwargs)
            return SYMBOLS[name](a, *rest)

        return traced

    return wrap


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note, over what was lent before for each."""
    for name in SYMBOLS:
        wrap_lookasides(executor, getattr(torch.nn.functional, name), _lookaside(name), with_symbol=True)
    wrap_lookasides(executor, torch.nn.functional.rrelu, _rrelu_lookaside("rrelu"), torch.rrelu, with_symbol=True)
    wrap_lookasides(executor, torch.nn.functional.rrelu_, _rrelu_lookaside("rrelu_"), torch.rrelu_, with_symbol=True)
