"""``copy_``, ``fill_`` and ``zero_`` into a tensor that requires grad: eager's zero gradient to what they overwrite.

Note [an overwritten value gets a zero gradient]
------------------------------------------------
Eager's ``t.copy_(s)``, ``t.fill_(v)`` and ``t.zero_()`` of a ``t`` that requires grad send the gradient of ``t``'s
new value to ``s`` (or ``v``) and a tensor of *zeros* to ``t``'s old value (``CopyBackwards``, ``FillBackward0``,
``ZeroBackward0``), which the ops that computed it multiply by their partials: ``0 * inf`` is NaN there. Functionalized,
the old value is simply dropped, so the leaves behind it got no gradient (None, or 0 where they have another
path)::

    def f(a):                          # a holds inf (fuzz --special-values --grad seed 20965 #41)
        t0 = a.cos()
        t2 = (t0 * a) * 0.5            # mul's backward: g * a, NaN where a is inf and g is 0
        t2.zero_()
        return t2, a                   # eager: a.grad NaN there; was: finite

Here, where the destination is floating and requires grad (grad mode on), the value written is joined to the old
value by ``where(full_like(t, False), trunc(t), value)`` (step_gradients.py, Note [floor and ceil carry a zero
gradient]): the same values, the same gradient to the source, and a zero to ``t``'s old value, which runs on through
the ops before as eager's does. Only where the source broadcasts to ``t``'s shape and is memory the program computed
(else the ``copy_`` as it was, with its errors: the joined value is new memory, and ``x.copy_(x[0])``'s overlap,
which eager refuses, would no longer show); ``fill_`` of a real number or a 0-dim tensor.
"""

from __future__ import annotations

from numbers import Number

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.proxies import NumberProxy, Proxy, TensorProxy
from thunder.core.trace import get_tracectx

from fusion_alias import inplace_lookasides, ops
from fusion_alias.zero_gradient_ops import _requiring_grad


def _overwritten(a) -> bool:
    return (isinstance(a, TensorProxy) and dtypes.is_float_dtype(a.dtype) and not dtypes.is_complex_dtype(a.dtype)
            and bool(_requiring_grad([a])))


def _joined(a, value):
    never = ltorch.full_like(a, False, dtype=torch.bool)
    return ltorch.where(never, ltorch.trunc(a), value)


# names of the ops whose result may be (a view of) their operand's memory, beside Thunder's view symbols
_MAY_BE_OPERAND = frozenset((
    "to", "type", "type_as", "contiguous", "reshape", "flatten", "unflatten", "view", "view_as", "detach", "getitem",
    "__getitem__", "expand", "expand_as", "positive", "float", "double", "half", "bfloat16", "real", "imag", "conj",
    "resolve_conj", "resolve_neg", "squeeze", "unsqueeze", "t", "transpose", "permute", "narrow", "select",
    "diagonal", "unfold", "as_strided", "movedim", "swapaxes", "split", "chunk", "unbind", "tensor_split", "alias",
    "shallow_copy", "dropout", "identity"))


_CONVERSIONS = frozenset(("to", "type", "type_as", "float", "double", "half", "bfloat16"))


def _fresh(src) -> bool:
    """Whether ``src`` is memory the program made by computing it (not an input, a view, or what an op may return
    as its operand): a ``copy_`` from anything else keeps its source, so that its overlap with the destination is
    checked as eager checks it (``x.copy_(x[0])``: "refer to a single memory location")."""
    trace = get_tracectx()
    for b in reversed(trace.bound_symbols if trace is not None else ()):
        if any(isinstance(o, Proxy) and o.name == src.name for o in b.flat_outs):
            name = b.sym.name
            operand = next((x for x in b.flat_args if isinstance(x, TensorProxy)), None)
            if name in _CONVERSIONS and operand is not None:  # (a conversion to another dtype is a new tensor)
                return operand.dtype != src.dtype
            return not (name in _MAY_BE_OPERAND or name.endswith("_") or name.startswith("unpack")
                        or b.sym in ltorch._syms_returning_views or b.sym in ltorch._syms_that_may_return_views
                        or ops.is_view(b))
    return False


def _from_detach(src) -> bool:
    """Whether ``src`` is a ``detach()`` result or a view of one (Note [a copy from a detached source, with detach a
    constant])."""
    trace = get_tracectx()
    bsyms = trace.bound_symbols if trace is not None else ()
    name = src.name
    for b in reversed(bsyms):
        if not any(isinstance(o, Proxy) and o.name == name for o in b.flat_outs):
            continue
        if b.sym.name == "detach":
            return True
        operand = next((x for x in b.flat_args if isinstance(x, TensorProxy)), None)
        if operand is None or not (b.sym.name in _MAY_BE_OPERAND or ops.is_view(b) or b.sym in ltorch._syms_returning_views):
            return False
        name = operand.name
    return False


# Note [a copy from a detached source, with detach a constant]
# ------------------------------------------------------------
# ``y.copy_(w.detach())`` (``a.copy_(a.detach())`` too) gives ``y``'s old value eager's zero gradient (CopyBackwards),
# and ``y`` stays a tensor with a history. Its source is no fresh memory, so it was not joined (its overlap with ``y``
# must stay visible to the checks): the zero came from Thunder's VJP of ``detach`` (zeros), until detach_gradient.py
# made ``detach`` a constant (Note [a detached output sends no zero gradient back]); then ``y``'s leaf got None and
# the returned ``y`` was a leaf that requires grad (a later ``y.add_(1)`` raised). So the copy runs as written, and
# its result is then joined to ``y``'s old value, read before it (``trunc``), by a second copy of the same values:
# ``old = trunc(y); y.copy_(w.detach()); y.copy_(where(False, old, y))``. The zero runs on through ``y``'s history
# as eager's (``y = x.exp() * 1`` of an ``x`` holding 1e5: ``0 * inf``, NaN in both), ``w`` gets nothing.


def _broadcasts_to(src, a) -> bool:
    try:
        return tuple(torch.broadcast_shapes(tuple(src.shape), tuple(a.shape))) == tuple(a.shape)
    except RuntimeError:
        return False


def register(executor) -> None:
    """Lend ``executor`` the lookasides of the module Note, over inplace_lookasides.py's."""
    copy = executor._lookasides[torch.Tensor.copy_]
    fill = inplace_lookasides._tensor_fill_

    def copy_(a, *args, **kwargs):
        src = args[0] if args else kwargs.get("src", kwargs.get("other"))
        if (_overwritten(a) and isinstance(src, TensorProxy) and not dtypes.is_complex_dtype(src.dtype)
                and _broadcasts_to(src, a)):
            if _fresh(src):
                args, kwargs = ((_joined(a, src), *args[1:]), kwargs) if args else ((), {**kwargs, **{
                    k: _joined(a, src) for k in ("src", "other") if k in kwargs}})
            elif _from_detach(src):  # Note [a copy from a detached source, with detach a constant]
                old = ltorch.trunc(a)
                out = copy(a, *args, **kwargs)
                never = ltorch.full_like(out, False, dtype=torch.bool)
                return copy(out, ltorch.where(never, old, out))
        return copy(a, *args, **kwargs)

    def fill_(a, *args, **kwargs):
        value = args[0] if args else kwargs.get("value")
        if _overwritten(a) and len(args) + len(kwargs) == 1 and (
                isinstance(value, (Number, NumberProxy)) and not isinstance(value, complex)
                and getattr(value, "python_type", float) is not complex
                or isinstance(value, TensorProxy) and value.ndim == 0 and not dtypes.is_complex_dtype(value.dtype)):
            src = ltorch.full_like(a, value) if not isinstance(value, TensorProxy) else ltorch.expand(
                ltorch.clone(value), tuple(a.shape))
            return copy(a, _joined(a, src))
        return fill(a, *args, **kwargs)

    def zero_(previous):
        def traced(a, *args, **kwargs):
            if _overwritten(a) and not args and not kwargs:
                return copy(a, _joined(a, ltorch.zeros_like(a)))
            return previous(a, *args, **kwargs)

        return traced

    for key in (torch.Tensor.copy_, ltorch.copy_):
        executor._lookasides[key] = copy_
    executor._lookasides[torch.Tensor.fill_] = fill_
    # (``x.fill_`` and ``torch.fill_`` reach inplace_lookasides' ``_tensor_fill_`` by its module name: Thunder has
    # no fill_ attribute; inplace_lookasides.py, Note [fill_ and copy_ as the ops Thunder has])
    inplace_lookasides._tensor_fill_ = fill_
    executor._lookasides[fill_] = fill_  # (run as a lookaside, on proxies, not by the interpreter)
    from fusion_alias.wrapped_lookasides import wrap_lookasides

    wrap_lookasides(executor, torch.Tensor.zero_, zero_, with_symbol=True)
