"""Layout and address queries that Thunder answers once, at trace time: checked against eager's answer.

Note [a layout query answered at trace time]
--------------------------------------------
Thunder 0.2.6 registers ``Tensor.is_contiguous``, ``dim_order``, ``is_set_to`` and ``data_ptr``
automatically: while tracing, each runs on a stand-in tensor made from the proxy's shape and dtype,
contiguous, with no storage. The answer is a Python value the user's code branches on, so the branch
taken at the first call is baked into the trace, and it is the stand-in's, not the tensor's::

    def f(a):
        return a * 1 if a.is_contiguous() else a * 2

    f(x.t())                      # eager: x.t() * 2; Thunder: x.t() * 1 (True, the stand-in's answer)

    def g(a, b):
        return a * 2 if a.data_ptr() == b.data_ptr() else a * 3

    g(x, x.clone())               # eager: x * 3; Thunder: x * 2 (0 == 0)

Plain ``thunder.jit`` returns the same wrong values (session 17 hand probes; the first was documented
for intermediates only). The value a query returns *as an output* is computed again at run time; the
branch is not. So each query in the program as traced is checked when the fusion pass knows the call's
tensors: eager's answer, from the actual layouts of inputs and eager's modelled layout of results
(``layouts._Layouts``), must be the one Thunder recorded, else the call is refused with an error that
names the query. The guard keys a compiled program by every non-contiguous input's strides and by the
exact relation of inputs that share memory (guard.py, Note [what the guard key holds]), so an answer
checked at compile time holds for every call that reuses the program. Where eager's answer cannot be
told (a result whose layout fusion_alias does not know; ``is_set_to`` of anything but inputs and the
same tensor twice) the call is refused too. ``data_ptr()`` is an address, which no compiled program
can hold for later calls: it is refused wherever it is called. Without a call (``thunder.jit`` with
``fusion_alias.executor`` directly) only ``data_ptr()`` is refused; the others are Thunder's answer.
"""

from __future__ import annotations

import torch
from thunder.core.proxies import TensorProxy

from fusion_alias.eager_result_layouts import result_symbols
from fusion_alias.errors import AliasInputError
from fusion_alias.layout_checks import _layout_known, _meta_like
from fusion_alias.layouts import _Layouts

#: the queries of the module Note, by Thunder symbol name
_LAYOUT_QUERIES = frozenset({"is_contiguous", "dim_order", "is_set_to"})
_ADDRESS = "data_ptr"


class LayoutQueryError(AliasInputError):
    """A layout query whose trace-time answer is not eager's, or cannot be checked (module Note)."""


def _recorded(b):
    """The value Thunder recorded for the query ``b`` (a tuple for ``dim_order``)."""
    out = b.output
    if isinstance(out, (list, tuple)):
        return tuple(getattr(o, "value", o) for o in out)
    return getattr(out, "value", out)


def _eager_answer(b, layouts, actual: dict):
    """Eager's answer to the query ``b``, or None where it cannot be told."""
    args = b.args
    if b.sym.name == "is_set_to":
        x, y = args[0], args[1] if len(args) > 1 else b.kwargs.get("tensor")
        if not isinstance(x, TensorProxy) or not isinstance(y, TensorProxy):
            return None
        if x.name == y.name:
            return True
        tx, ty = actual.get(x.name), actual.get(y.name)
        return None if tx is None or ty is None else bool(tx.is_set_to(ty))
    x = args[0]
    if not isinstance(x, TensorProxy):
        return None
    if x.name in actual:
        layout = _meta_like(actual[x.name])
    elif layouts is not None and _layout_known(x, layouts, actual):
        layout = layouts.of(x)
    else:
        return None
    try:
        if b.sym.name == "dim_order":
            return tuple(layout.dim_order())
        fmt = b.kwargs.get("memory_format", args[1] if len(args) > 1 else torch.contiguous_format)
        return bool(layout.is_contiguous(memory_format=torch.contiguous_format if fmt is None else fmt))
    except (RuntimeError, TypeError):
        return None


def check_layout_queries(traced, flat: list, actual: dict) -> None:
    """Refuse each query of the program as traced (``traced``) whose trace-time answer is not eager's
    (module Note). ``flat``: the pass's flattened program, for eager's layouts of results; ``actual``:
    trace input name -> the call's tensor (empty without a call)."""
    if traced is None:
        return
    queries = [b for b in traced.bound_symbols if b.sym.name in _LAYOUT_QUERIES or b.sym.name == _ADDRESS]
    if not queries:
        return
    layouts = None
    for b in queries:
        x = b.args[0] if b.args else None
        name = getattr(x, "name", "?")
        if b.sym.name == _ADDRESS:
            raise LayoutQueryError(
                f"fusion_alias: Tensor.data_ptr() ({name}.data_ptr()) inside a compiled function is not supported: "
                "Thunder 0.2.6 answers it once, while tracing, with 0 for every tensor, and a branch on it (or a "
                "comparison of two addresses) is baked into the compiled program. Compare addresses before calling "
                "the compiled function and pass the result in")
        if not actual:
            continue
        if layouts is None:
            layouts = _Layouts(flat, actual, {}, fresh_contiguous=False, results=result_symbols(traced))
        want, got = _eager_answer(b, layouts, actual), _recorded(b)
        if want is None:
            raise LayoutQueryError(
                f"fusion_alias: cannot tell eager PyTorch's answer to Tensor.{b.sym.name}() of {name} (a result the "
                "compiled program does not keep, made by an op fusion_alias cannot see through, or not an input), "
                f"and Thunder 0.2.6 answers it once while "
                f"tracing ({got!r}), baking any branch on it into the compiled program: not supported. Ask it of "
                "an input, or before calling the compiled function")
        if want != got:
            raise LayoutQueryError(
                f"fusion_alias: Tensor.{b.sym.name}() of {name} is {want!r} in eager PyTorch, but Thunder 0.2.6 "
                f"answers it once while tracing, as {got!r} (the answer for a contiguous stand-in without storage), "
                "and a branch on it would follow Thunder's answer: not supported. Ask it before calling the compiled function and pass "
                "the result in, or make the tensor contiguous first (.contiguous())")
