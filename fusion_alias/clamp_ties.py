"""``clamp`` at its bounds, with eager's gradient.

Note [clamp's gradient at a bound]
----------------------------------
Eager's ``clamp`` passes the gradient to every element inside the closed interval ``[min, max]``
(``clamp_backward``: ``self >= min & self <= max``), so an element equal to a bound keeps its gradient.
Thunder 0.2.6 decomposes ``clamp`` as ``where(a > min, a, min)`` and ``where(a < max, a, max)``: at a tie
``where`` picks the bound, and the element's gradient is 0, silently (plain ``thunder.jit`` too)::

    x = torch.tensor([0.25, 0.5], requires_grad=True)
    x.clamp(max=0.25).sum().backward()     # eager x.grad [1, 0]; Thunder [0, 0]

A tie is what ``x.clamp_(max=x.max().item())`` or ``x.clamp(max=x[0, 4])`` makes by construction (the fuzzer's
``item`` generator, seeds 40011 #48, 40041 #63/#85/#98, ``--grad``). So ``clamp``, ``clamp_``, ``clip``,
``clamp_min`` and ``clamp_max`` (and the in-place forms inplace_lookasides.py makes of the last three) are traced
as ``where`` with the tie on the element's side instead::

    where((a >= min) | (a != a), a, min)   then   where((a <= max) | (a != a), a, max)

The values are Thunder's (a NaN element stays NaN, a NaN bound gives NaN, ``min > max`` gives ``max``), and so
is the gradient away from the bounds and from NaN; a bound that requires grad gets its gradient where the element passes it,
as eager's. It is as many prims as Thunder's own (a comparison, a NaN test, two ``where``s per bound become a
comparison, a NaN test, an ``or`` and a ``where``), so it is traced so whether or not the call computes gradients:
a tensor made in the program has no ``requires_grad`` in the trace to tell. A call with ``out=`` is left as it was.

Note [a NaN element: its value, no gradient]
--------------------------------------------
Eager's mask ``self >= min & self <= max`` is False at a NaN element: its value stays NaN and its gradient is
0 (in every dtype and length, checked). Kept on the element's side by ``a != a``, the NaN element also kept
the element's gradient: ``x.clamp_max(-0.1)`` of ``x = [nan, 1, -1]`` had gradient ``[1, 0, 1]`` where eager's
(and plain ``thunder.jit``'s) is ``[0, 0, 1]`` (fuzz ``--special-values --grad``, seed 31042 #0). So the NaN
element's value is a NaN constant, chosen where ``a`` is NaN, which passes no gradient back::

    where(inside | (a != a), where(a != a, nan, a), bound)

Note [a NaN bound: no gradient]
-------------------------------
Eager's ``torch.clamp(x, max=m)`` with a NaN in the tensor bound ``m`` is NaN there, and passes the gradient to
neither: the element's mask ``x <= m`` is False, and the bound's (``x > m``) too. Chosen by the ``where``, the bound
took the gradient: ``m.grad`` 1 where eager's is 0, and NaN behind a ``pow(0.5)`` of the result (fuzz ties
``--special-values --grad`` seed 50020 #44). A NaN of the bound is a NaN constant too::

    where(inside | (a != a), where(a != a, nan, a), where(m != m, nan, m))
"""

from __future__ import annotations

from functools import partial

import torch
from thunder.core.langctxs import Languages, langctx
from thunder.core.symbol import Symbol
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _clamped(a, min=None, max=None):
    """Thunder's ``clamp`` values, with a tie kept on the element's side (module Note)."""
    if min is None and max is None:
        return ltorch.clamp(a, min, max)  # (Thunder's error)
    if min is not None:
        a = _bounded(a, ltorch.ge(a, min), min)
    if max is not None:
        a = _bounded(a, ltorch.le(a, max), max)
    return a


def _bounded(a, inside, bound):
    """``a`` where ``inside`` (a tie included), else ``bound``; a NaN element of ``a`` stays NaN, with no
    gradient (Note [a NaN element: its value, no gradient])."""
    nan = ltorch.ne(a, a)
    kept = ltorch.where(nan, float("nan"), a) if ltorch.is_floating_point(a) else a
    if isinstance(bound, TensorProxy) and dtypes.is_inexact_dtype(bound.dtype):  # Note [a NaN bound: no gradient]
        bound = ltorch.where(ltorch.ne(bound, bound), float("nan"), bound)
    return ltorch.where(ltorch.logical_or(inside, nan), kept, bound)


clamp = Symbol(name="clamp", meta=langctx(Languages.TORCH)(_clamped), id="fusion_alias.clamp")


def _clamped_in_place(a, min=None, max=None):
    return ltorch.copy_(a, clamp(a, min, max))


clamp_ = Symbol(name="clamp_", meta=langctx(Languages.TORCH)(_clamped_in_place), id="fusion_alias.clamp_")


def _bounds(only, args, kwargs) -> tuple:
    """``(min, max)`` of a call of ``clamp``/``clip`` (``only`` None) or ``clamp_min``/``clamp_max`` (``only``: the
    name of the one bound it takes)."""
    if only is not None:
        bound = args[0] if args else kwargs.get(only)
        return (bound, None) if only == "min" else (None, bound)
    bounds = dict(zip(("min", "max"), args), **kwargs)
    return bounds.get("min"), bounds.get("max")


def _lookaside(previous, ours, only):
    """``ours`` in place of ``previous`` (Thunder's symbol, or a lookaside lent before: ``out=``, out_arguments.py),
    which still takes a call with ``out=``."""

    def traced(a, *args, **kwargs):
        if "out" in kwargs:
            return previous(a, *args, **kwargs)
        return ours(a, *_bounds(only, args, kwargs))

    return traced


def as_traced(name: str):
    """The function ``Tensor.<name>`` is traced as here (``clamp``, ``clip``, ``clamp_min``, ``clamp_max``), for the
    in-place forms inplace_lookasides.py makes of them (``x.clip_(0, 1)``), or None."""
    only = {"clamp_min": "min", "clamp_max": "max"}.get(name)
    if name not in ("clamp", "clip") and only is None:
        return None
    return lambda a, *args, **kwargs: clamp(a, *_bounds(only, args, kwargs))


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [clamp's gradient at a bound], for the ``torch`` functions and the
    Thunder symbols a tensor's methods resolve to."""
    for torch_fn, ours, only in ((torch.clamp, clamp, None), (torch.clip, clamp, None), (torch.clamp_, clamp_, None),
                                 (torch.clamp_min, clamp, "min"), (torch.clamp_max, clamp, "max")):
        wrap_lookasides(executor, torch_fn, partial(_lookaside, ours=ours, only=only), with_symbol=True)
