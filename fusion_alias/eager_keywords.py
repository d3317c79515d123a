"""Eager's keyword names for the operands of Thunder's positional-only symbols.

Note [eager's keyword names for operands]
-----------------------------------------
Thunder 0.2.6 declares the operands of its elementwise symbols positional only (``def mul(a, b, /)``,
``def add(a, b, /, *, alpha=1)``, ``def where(pred, a, b, /)``), in the order eager takes them. Eager
also takes them by name: ``x.mul(other=2)``, ``torch.add(input=x, other=y)``, ``x.pow_(exponent=2)``,
``torch.where(condition=m, input=x, other=y)``, ``x.addcmul_(tensor1=a, tensor2=b, value=0.5)``. Those
raised Thunder's ``TypeError: mul() got an unexpected keyword argument 'other'``, in plain ``thunder.jit``
and here, where eager runs them. The lookasides below take such a call when it names an operand Thunder's
symbol does not take by name: eager binds the call first, on meta tensors of the operands' shapes and
dtypes (a call eager refuses, ``x.mul(b=2)`` or an operand given twice, raises eager's own TypeError), then
each operand named by eager's name moves to its place, in the order of eager's schema (``aten::<op>``, its
``self`` called ``input`` as torch's functions call it), and Thunder's symbol (or the lookaside lent for
it before, ``out=``'s) gets the call. Example::

    torch.add(input=x, other=y, alpha=2)   ->  add(x, y, alpha=2)
    x.pow_(exponent=2)                     ->  pow_(x, 2)

Calls that name no such operand go to the symbol unchanged. Only the ops of ``_OPS`` are taken: for each,
Thunder's symbol takes eager's operands in eager's order (read off Thunder 0.2.6's definitions, and tested
against eager by tests/test_session38_eager_keywords.py).
"""

from __future__ import annotations

import inspect
from functools import partial

import torch
import thunder.torch as ltorch
from thunder.core import dtypes
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.symbol import Symbol

from fusion_alias.errors import out_refusal

_OPS = (
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "maximum", "minimum", "eq",
    "ne", "lt", "le", "gt", "ge", "atan2", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
    "logical_or", "logical_xor", "nextafter", "pow", "where", "addcmul", "addcdiv",
    # session 39: ``torch.matmul(x, other=y)``, ``x.bmm(mat2=y)``, ``torch.exp(input=x)``, ``torch.sum(input=x,
    # dim=0)`` (tests/test_session39_keyword_operands.py)
    "matmul", "ldexp", "bmm", "outer", "lerp", "masked_fill", "clamp",
    "abs", "neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "rsqrt", "sign", "erf", "square",
    "bitwise_not", "logical_not", "clone", "relu", "floor", "ceil", "trunc", "reciprocal", "exp2", "expm1", "log1p",
    "log2", "log10", "sinh", "cosh", "asin", "acos", "atan", "isnan", "isinf", "isfinite",
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "tril", "triu", "softmax", "log_softmax",
    "logsumexp", "any", "all",
    # session 40: ``x.reshape(shape=(4,))``, ``x.view(size=...)``, ``x.permute(dims=...)``, ``x.split(split_size=1)``,
    # ``torch.nan_to_num(input=x)`` (tests/test_session40_keyword_shapes.py): Thunder's symbols take the shape as
    # their varargs, which a tuple in the first place fills
    "reshape", "view", "permute", "split", "nan_to_num",
    # session 41: ``x.expand(size=(3, 4))``, ``x.repeat(repeats=(1, 2))``, ``x.expand_as(other=y)``, ``x.view_as(other=y)``
    # (tests/test_session41_keyword_shapes.py)
    "expand", "repeat", "expand_as", "view_as",
)


def _positional_names(name: str) -> tuple[str, ...] | None:
    """The operands of eager's first ``aten::<name>`` overload that has a ``self``, by the names torch's Python
    functions give them (``self`` is ``input``); None where there is none."""
    for schema in torch._C._jit_get_schemas_for_operator("aten::" + name):
        if any(a.name == "self" for a in schema.arguments):
            return tuple("input" if a.name == "self" else a.name for a in schema.arguments if not a.kwarg_only)
    return None


def _keyword_names(symbol) -> frozenset[str] | None:
    """The names Thunder's ``symbol`` takes by keyword (None: any, or not known)."""
    try:
        params = inspect.signature(symbol.meta).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def meta_of(x):
    """``x`` with each tensor proxy as an empty meta tensor of its shape and dtype; None where a proxy of another
    kind (a number traced as a proxy) is inside: eager cannot be asked."""
    if isinstance(x, TensorProxy):
        return torch.empty(tuple(x.shape), dtype=dtypes.to_torch_dtype(x.dtype), device="meta")
    if isinstance(x, Proxy):
        return None
    if isinstance(x, dict):
        items = {k: meta_of(y) for k, y in x.items()}
        return None if any(items[k] is None and y is not None for k, y in x.items()) else items
    if isinstance(x, (tuple, list)):
        items = [meta_of(y) for y in x]
        return None if any(i is None and y is not None for i, y in zip(items, x)) else type(x)(items)
    return x


def _by_position(names, keywords, previous, eager, args, kwargs):
    """Note [eager's keyword names for operands]: ``previous(*args, **kwargs)`` with the operands eager names in
    ``kwargs`` moved to their places; ``eager(*metas, **kwargs)`` binds the call first."""
    if not kwargs or keywords is None or kwargs.keys() <= keywords:
        return previous(*args, **kwargs)
    metas = meta_of((args, kwargs))
    if metas is None:
        return previous(*args, **kwargs)  # (eager cannot be asked: Thunder's answer, as before)
    try:
        eager(*metas[0], **metas[1])  # eager's binding, or its TypeError
    except TypeError:
        raise
    except Exception:  # noqa: BLE001 - eager binds, then refuses the values (a dtype): as the positional spelling
        pass
    args, kwargs = list(args), dict(kwargs)
    for name in names[len(args):]:
        if name not in kwargs or name in keywords:
            break
        args.append(kwargs.pop(name))
    return previous(*args, **kwargs)


METHODS: set[str] = set()  # the methods ``inplace_lookasides._getattr`` sends to ``torch.<name>`` (Note [a method Thunder dispatches])


def _method(name: str, *metas, **kwargs):
    return getattr(metas[0], name)(*metas[1:], **kwargs)


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [eager's keyword names for operands], over those lent before: for
    ``torch.<op>`` (the function), and for Thunder's symbols of ``Tensor.<op>`` and ``Tensor.<op>_`` (what a
    tensor's method resolves to; ``Tensor.where`` is inplace_lookasides.py's, Note [Tensor.where is where(condition,
    self, other)])."""
    table = ltorch._torch_to_thunder_function_map

    def lend(key, symbol, names, eager, op: str) -> None:
        if symbol is None or names is None:
            return
        # (``add`` and ``mul`` trace through Thunder's DTensor dispatch, a function of ``ltorch.<op>``: that
        # symbol's keywords)
        named = symbol if isinstance(symbol, Symbol) else getattr(ltorch, op, None)
        previous = executor._lookasides.get(key, symbol)
        if key not in executor._lookasides and getattr(torch, op, None) is key:
            previous = partial(_refusing_out, op, previous)  # (out_arguments.py, Note [out= of other functions])
        executor._lookasides[key] = partial(_call, names, _keyword_names(named), previous, eager)

    for name in _OPS:
        fn = getattr(torch, name, None)
        names = _positional_names(name)
        if fn is not None:
            lend(fn, table.get(fn), names, fn, name)
        method = getattr(torch.Tensor, name, None)
        if method is not None and name != "where":
            symbol = table.get(method)
            if isinstance(symbol, Symbol):
                lend(symbol, symbol, names, partial(_method, name), name)
            elif symbol is not None and fn is not None and names is not None and len(names) > 1:
                # Note [a method Thunder dispatches]: ``x.add`` and ``x.mul`` resolve to Thunder's DTensor dispatch
                # function, which also serves ``x + y``: a lookaside keyed by it broke the interpreter's ``*``
                # (``descriptor '__mul__' ... doesn't apply to a 'TensorProxy'``). The method goes through the
                # function instead (inplace_lookasides._getattr): ``x.add(...)`` is
                # ``torch.add(x, ...)``, whose lookaside is above. (Not for an op of one operand, ``x.exp()``:
                # its method names none.)
                METHODS.add(name)
        inplace = getattr(torch.Tensor, name + "_", None)
        if inplace is not None:
            symbol = table.get(inplace)
            if isinstance(symbol, Symbol):
                lend(symbol, symbol, _positional_names(name + "_"), partial(_method, name + "_"), name + "_")


def _refusing_out(name: str, previous, *args, **kwargs):
    """``previous`` with ``out=`` refused by name, as out_arguments.py refuses it of the functions this module does
    not lend a lookaside (its refusal wraps Thunder's lookaside, which the executor's takes the place of)."""
    if "out" in kwargs:
        if kwargs["out"] is not None:
            raise out_refusal(name)
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}  # (eager's default, spelled out)
    return previous(*args, **kwargs)


def _call(names, keywords, previous, eager, *args, **kwargs):
    return _by_position(names, keywords, previous, eager, args, kwargs)
