"""``out=`` arguments of torch's elementwise functions, traced as the write they are.

Note [out= is an in-place op]
-----------------------------
``torch.add(a, b, out=o)`` computes ``a + b`` and stores it into ``o``'s memory, as ``o.copy_(a + b)``
would, with eager's checks for a store: the result must be castable to ``o``'s dtype (``torch.can_cast``),
``o`` may not partially overlap an operand (TensorIterator's ``assert_no_partial_overlap``:
``torch.add(x, x, out=x)`` runs, ``torch.add(x, x[0], out=x)`` raises), and no argument may require grad
where grad mode is on (unless the function has no gradient, ``eq`` say: gradient_operands.py,
Note [writes eager's autograd does not record]). Thunder 0.2.6's symbols take no ``out`` and raised
``TypeError: add() got an unexpected keyword argument 'out'``. Here each such call is one composite symbol,
``add_out``, whose first argument is ``o``, and whose decomposition is the op and a ``copy_`` into ``o``: the shape the
in-place ops of ``inplace_lookasides.py`` have, so the pass's checks of in-place ops (their operands'
overlap with the written tensor, ``refusals/operands.py``; the store's dtype) read it as the write it is.
Worked example::

    def f(x, buf):
        torch.mul(x, 2, out=buf)     # buf_1 = mul_out(buf, x, 2): mul(x, 2), copy_ into buf
        return x + buf               # reads buf's new value (buf_1), as after buf.copy_(x * 2)

With ``buf = x[0]`` eager raises (``x`` and ``buf`` overlap partly) and so does fusion_alias; with
``buf = x`` both compute ``x = 2 x`` and return ``4 x``.

Eager resizes an ``out`` of another shape (with a warning unless it is empty): that changes the
tensor's shape in place, which a trace cannot express, so it is refused with a message that names the
workaround. Only elementwise functions are covered (``_ELEMENTWISE``): their ``out`` rules are the
in-place ops' rules above. Any other function Thunder traces (``torch.cat``, ``torch.matmul``, ``torch.sum``,
``torch.zeros``, ...) raises ``OutArgumentError`` naming it and the workaround (Note [out= of other functions]).
"""

from __future__ import annotations

from functools import partial

import torch
import thunder.torch as ltorch
from thunder.core import jit_ext
from thunder.core.compile_data import get_compile_data
from thunder.core.interpreter import interpreter_needs_wrap
from thunder.core.langctxs import Languages, langctx
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import Symbol
from thunder.core.trace import get_tracectx
from thunder.core import dtypes

from fusion_alias.aliasing import _proxies
from fusion_alias.errors import OutArgumentError, out_refusal  # (tests import OutArgumentError from here)
from fusion_alias.gradient_operands import OUT_WITHOUT_GRADIENT
from fusion_alias.inplace_lookasides import _as_inplace, _type_name
from fusion_alias.traced_grad_mode import traced_grad_enabled

_ELEMENTWISE = (
    "add", "sub", "mul", "div", "true_divide", "remainder", "fmod", "pow", "float_power", "atan2", "hypot",
    "copysign", "nextafter", "minimum", "maximum", "lerp", "addcmul", "addcdiv", "clamp", "clamp_min", "clamp_max",
    "where", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh",
    "sigmoid", "abs", "neg", "reciprocal", "floor", "ceil", "round", "trunc", "sign", "erf", "erfc",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    # (session 20: TensorIterator ops too, each checked on torch 2.9.1 to refuse an out that partly overlaps its
    # operand and to run with out being the operand itself, as the ones above)
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "angle", "deg2rad", "rad2deg", "fmax",
    "fmin", "gcd", "lcm", "heaviside", "ldexp", "lgamma", "logaddexp", "logaddexp2", "sgn", "signbit",
    "isneginf", "isposinf", "nan_to_num", "floor_divide", "bitwise_left_shift", "bitwise_right_shift",
)

# Note [out dtypes eager takes exactly]: most of these store a result into an ``out`` of any dtype it can be
# cast to (``torch.can_cast``, as an in-place op does); these take only the result's own dtype (checked on torch
# 2.9.1: ``torch.where(c, x, y, out=o)`` of float32 values into a float64 ``o`` raises "Expected out type to be
# Float but got Double", ``torch.add`` runs).
_EXACT_DTYPE = frozenset({
    "clamp", "clamp_min", "clamp_max", "where", "abs", "neg", "floor", "ceil", "round", "trunc", "sign",
    "bitwise_not", "float_power", "heaviside", "sgn", "signbit", "isneginf", "isposinf", "nan_to_num",
})

_OUT_SYMBOLS: dict[str, Symbol] = {}


def _out_symbol(name: str, traced) -> Symbol:
    """The composite symbol ``<name>_out(out, *args, **kwargs)``: ``traced(*args, **kwargs)`` stored into ``out``."""
    sym = _OUT_SYMBOLS.get(name)
    if sym is None:

        def meta(out, *args, **kwargs):
            result = traced(*args, **kwargs)
            if tuple(result.shape) != tuple(out.shape):
                raise OutArgumentError(
                    f"fusion_alias: torch.{name}(..., out=o) with o of shape {list(out.shape)} and a result of "
                    f"shape {list(result.shape)} is not supported: eager resizes o in place, which a trace cannot "
                    f"express. Workaround: o = torch.{name}(...) without out=, or an o of the result's shape")
            if name in _EXACT_DTYPE and result.dtype is not out.dtype:
                want, have = dtypes.to_torch_dtype(result.dtype), dtypes.to_torch_dtype(out.dtype)
                raise RuntimeError(f"{name}(): expected out type to be {_type_name(want)} but got {_type_name(have)}")
            return _as_inplace(out, result, name)

        sym = _OUT_SYMBOLS[name] = Symbol(name=f"{name}_out", meta=langctx(Languages.TORCH)(meta),
                                          id=f"fusion_alias.{name}_out")
    return sym


def _may_require_grad(tensors) -> bool:
    """Whether one of ``tensors`` may require grad: Note [which values require grad while tracing]."""
    if any(t.requires_grad for t in tensors):
        return True
    trace = get_tracectx()
    if trace is None:
        return False
    return not {t.name for t in tensors}.isdisjoint(_grad_names(trace))


def _grad_names(trace) -> set[str]:
    """The names of the values of ``trace`` recorded so far that may require grad (Note [which values require
    grad while tracing]). The walk goes on from where the last call for this trace stopped (the trace's list of
    symbols is only appended to while it is recorded): a program of many ``out=`` calls was quadratic."""
    bsyms = trace.bound_symbols
    walk = getattr(trace, "_fusion_alias_grad_walk", None)
    if walk is None or walk[0] is not bsyms or walk[1] > len(bsyms):
        walk = [bsyms, 0, set()]
        trace._fusion_alias_grad_walk = walk
    grad_names = walk[2]
    for b in bsyms[walk[1]:]:
        if b.sym.name == "detach":
            continue
        if any(isinstance(a, TensorProxy) and (a.requires_grad or a.name in grad_names) for a in b.flat_args):
            for o in b.flat_outs:
                if isinstance(o, TensorProxy) and (dtypes.is_float_dtype(o.dtype) or dtypes.is_complex_dtype(o.dtype)):
                    grad_names.add(o.name)
    walk[1] = len(bsyms)
    return grad_names


# Note [which values require grad while tracing]
# ----------------------------------------------
# Eager refuses ``torch.add(y, 1, out=o)`` when ``y`` requires grad, and ``y = x * 2`` of an ``x`` that
# requires grad does. Thunder 0.2.6 sets ``requires_grad`` on the proxies of the inputs only: ``y``'s proxy
# says False while tracing, and the call ran where eager raises (session 19 probe). So the trace recorded so
# far is walked from the proxies that require grad through every op whose result is floating or complex,
# ``detach`` aside. Ops under a ``no_grad`` block earlier in the program are followed too: such a value counts
# as requiring grad, and the call is refused where eager would run it (loud, never a silent difference).


def _with_out(name: str, traced, *args, out=None, **kwargs):
    """``torch.<name>(*args, out=out, **kwargs)`` under the interpreter (module Note); without ``out``, Thunder's own."""
    if out is None:
        return traced(*args, **kwargs)
    if not isinstance(out, TensorProxy):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    grad_enabled = traced_grad_enabled()  # (grad mode as the program sets it: ``with torch.no_grad()`` inside it too)
    operands = [p for p in _proxies((args, kwargs), []) if isinstance(p, TensorProxy)] if grad_enabled else []
    if grad_enabled and name not in OUT_WITHOUT_GRADIENT and _may_require_grad([out, *operands]):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    return _out_symbol(name, traced)(out, *args, **kwargs)


# Note [out= of other functions]
# ------------------------------
# ``torch.cat([a, b], out=buf[:6])`` or ``torch.matmul(x, w, out=o)`` raised Thunder's
# ``TypeError: cat() got an unexpected keyword argument 'out'``, which names neither the argument's meaning nor a
# way out. Their eager rules differ from the in-place ops' (checked on torch 2.9.1: ``cat`` refuses an out that
# overlaps an input at all, ``mm`` and ``sum`` run with an out that is their operand, ``mm`` takes only its
# result's dtype, ``zeros`` resizes silently), so rather than guess them they are refused, by name, with the
# spelling that means the same where eager runs: ``o.copy_(torch.cat([a, b]))``. Every ``torch.<name>`` Thunder
# traces is wrapped (a function eager takes no ``out`` for is refused by the same words, where eager raises a
# TypeError); ``out=None`` spelled out is eager's default and is dropped.


def _refusing_out(executor, name: str, thunders):
    """Thunder's lookaside for ``torch.<name>`` (``thunders``), refusing an ``out`` by name where fusion_alias's
    executor is asked for (Note [out= of other functions]); any other ``thunder.jit`` keeps Thunder's own error."""

    def refuse(*args, **kwargs):
        raise out_refusal(name)

    def lookaside(*args, **kwargs):  # (interpreter values: the call's arguments wrapped)
        if "out" in kwargs:
            compile_data = get_compile_data()
            if compile_data is not None and executor in compile_data.executors_list:
                if getattr(kwargs["out"], "value", kwargs["out"]) is not None:
                    return interpreter_needs_wrap(refuse)(*args, **kwargs)
                kwargs = {k: v for k, v in kwargs.items() if k != "out"}  # (eager's default, spelled out)
        return thunders(*args, **kwargs)

    return lookaside


def traced_for_fx_node(node):
    """What fusion_alias traces for a Dynamo FX node ``torch.<name>(..., out=o)`` of ``_ELEMENTWISE``, or None.

    Note [out= under torch.compile]: ThunderFX's splitter asks Thunder's op table whether a node is traceable,
    and Thunder's ``add`` takes no ``out``: the node went to Inductor, which ran ``torch.add(x, x.t(), out=x)``
    where eager raises (a partial overlap; fuzz seed 20764 #11, session 20). Told that fusion_alias traces
    it (dynamo.py), the splitter keeps the node in the piece, whose operand check raises eager's error.
    """
    if node.op != "call_function" or node.kwargs.get("out") is None:
        return None
    name = getattr(node.target, "__name__", None)
    if name not in _ELEMENTWISE or getattr(torch, name, None) is not node.target:
        return None
    traced = ltorch._torch_to_thunder_function_map.get(node.target)
    return partial(_with_out, name, traced) if traced is not None else None


def register(executor) -> None:
    """Lend ``executor`` a lookaside per function of ``_ELEMENTWISE`` that traces its ``out=`` (module Note), and
    refuse ``out=`` by name for every other ``torch.<name>`` Thunder traces (Note [out= of other functions])."""
    for name in _ELEMENTWISE:
        fn = getattr(torch, name, None)
        traced = ltorch._torch_to_thunder_function_map.get(fn) if fn is not None else None
        if traced is not None and fn not in executor._lookasides:
            executor._lookasides[fn] = partial(_with_out, name, traced)
    # (around Thunder's own lookaside of each function, so that its calls without ``out`` are traced exactly as
    # before: foreach_lookasides.py, Note [foreach lookasides are Thunder's, asked for fusion_alias's executor])
    lookasides = jit_ext._general_jit_lookaside_map
    for fn in list(ltorch._torch_to_thunder_function_map):
        name = getattr(fn, "__name__", None)
        if (name and name not in _ELEMENTWISE and getattr(torch, name, None) is fn and fn not in executor._lookasides
                and fn in lookasides):
            lookasides[fn] = _refusing_out(executor, name, lookasides[fn])
