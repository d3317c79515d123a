"""Names Thunder 0.2.6 cannot take: a keyword argument named ``fn`` (its interpreter), a tensor parameter
named ``args`` or ``kwargs`` (its prologue: Note [a tensor parameter named args or kwargs] below).

Note [a keyword argument named fn]
----------------------------------
Thunder's interpreter hands each call it interprets to ``general_jit_lookaside(fn, *args, **kwargs)``,
whose first parameter is named ``fn`` and is not positional-only: a call with a keyword argument named
``fn`` fails there::

    def g(x, fn=inner):
        return fn(x) + 1

    thunder.jit(g)(x, fn=inner)   # InterpreterError: ... general_jit_lookaside() got multiple values
                                  #   for argument 'fn'

(plain ``thunder.jit`` too; no other name fails: ``self``, ``f``, ``func``, ``compilectx`` and ``inst``
were checked). ``thunder.jit(g)(x)`` runs, since Thunder binds the default itself, but from session 38
``fusion_alias.jit`` passes a function held in the jitted function's own default as an argument, by
name (mutable_defaults.py, Note [a function or a class in the jitted function's own default]), so
``fusion_alias.jit(g)(x)`` failed on every call (session 39 probe).

So the call's ``fn`` keyword goes to its position where the jitted function (or a module's ``forward``)
takes it positionally: the parameters between the last positional argument and ``fn`` are filled from
the call's keywords or their defaults (``g(x, fn=h)`` runs as ``g(x, h)``; ``def g(x, k=2.0, fn=inner)``
called ``g(x, fn=h)`` as ``g(x, 2.0, h)``), which binds every parameter as the call did. A keyword-only
``fn``'s default is not passed (mutable_defaults.py leaves it to Thunder, which reads it while tracing), so
api.py compiles anew where its shape changes (:func:`unpassed_shape`), and a keyword-only ``fn`` the caller
gives, or one inside the program (``helper(x, fn=inner)``), is refused with an error that names the problem
(:func:`refusal_for`).
"""

from __future__ import annotations

import inspect
import types

import torch

from fusion_alias.mutable_defaults import _constant
from fusion_alias.object_shapes import shape_of

NAME = "fn"  # (mutable_defaults.py's filler leaves a keyword-only default of this name out)

_THUNDER_WORDS = "general_jit_lookaside() got multiple values for argument 'fn'"


class KeywordFnError(NotImplementedError):
    """A keyword argument named ``fn`` that cannot be passed positionally, or a tensor parameter named ``args`` or
    ``kwargs`` (module Notes)."""


def _message(where: str) -> str:
    return (
        f"fusion_alias: {where} a keyword argument named 'fn', which Thunder 0.2.6's interpreter cannot take "
        "(its general_jit_lookaside(fn, *args, **kwargs) takes it for its own first parameter; plain thunder.jit "
        "fails too). Workaround: pass it positionally, or rename the parameter"
    )


def keyword_mover(function, bound: int = 0):
    """``move(args, kwargs) -> (args, kwargs)`` that passes a keyword ``fn`` positionally where ``function``
    (called with ``bound`` leading arguments already bound: a method's ``self``) takes it so (module Note);
    None for a function without such a parameter and for anything but a Python function. A call eager
    rejects (``fn`` given twice, a parameter before it left out) raises eager's TypeError."""
    if type(function) is not types.FunctionType:
        return None
    code = function.__code__
    names = code.co_varnames[: code.co_argcount]
    if NAME not in names or names.index(NAME) < code.co_posonlyargcount:
        return None  # keyword-only, caught by **kwargs, or not a parameter: refusal_for names it
    position = names.index(NAME)

    def move(args: tuple, kwargs: dict):
        if NAME not in kwargs:
            return args, kwargs
        rest = dict(kwargs)
        defaults = function.__defaults__ or ()
        first_default = code.co_argcount - len(defaults)
        filled = []
        for i in range(len(args) + bound, position):
            name = names[i]
            if name in rest:
                filled.append(rest.pop(name))
            elif i >= first_default:
                filled.append(defaults[i - first_default])
            else:
                break
        else:
            if len(args) + bound <= position:
                filled.append(rest.pop(NAME))
                return (*args, *filled), rest
        # eager's TypeError for the call as given (``bound`` stands in for ``self``)
        inspect.signature(function).bind(*((None,) * bound), *args, **kwargs)
        return args, kwargs

    return move


def mover_for(fn):
    """:func:`keyword_mover` for the function or module ``fn`` given to ``fusion_alias.jit`` (a module's ``forward``)."""
    if isinstance(fn, torch.nn.Module):
        return keyword_mover(getattr(type(fn), "forward", None), 1)
    return keyword_mover(fn)


def unpassed_shape(fn):
    """The shape of a keyword-only ``fn`` default of the Python function ``fn``, which the filler does not pass:
    Thunder reads it while tracing, so api.py compiles anew where it changes (a function whose defaults are
    replaced), as the guard would for an argument (module Note); None where there is none."""
    kw = getattr(fn, "__kwdefaults__", None) if type(fn) is types.FunctionType else None
    if not kw or NAME not in kw or _constant(kw[NAME]):
        return None
    return shape_of(kw[NAME])


# Note [a tensor parameter named args or kwargs]
# -----------------------------------------------
# Thunder 0.2.6's prologue is ``def prologue(*args, **kwargs)`` and binds each tensor it unpacks to the
# parameter's own name: a tensor parameter named ``args`` rebinds the prologue's ``args`` to the tensor, and the
# next check fails with ``AssertionError: expected Tensor, got tuple`` (``kwargs``: ``got dict``), plain
# ``thunder.jit`` too, positionally or by keyword (session 39 probe; a number or a list under that name runs).
# The assertion is raised as a refusal that names the parameter.
_PROLOGUE_WORDS = ("expected Tensor, got tuple", "expected Tensor, got dict")


def prologue_refusal(function, error: Exception) -> KeywordFnError | None:
    """The refusal for Thunder's prologue failing on a parameter named ``args`` or ``kwargs`` of ``function`` (Note
    [a tensor parameter named args or kwargs]), or None."""
    code = getattr(getattr(function, "forward", function), "__code__", None)
    if not isinstance(error, AssertionError) or code is None or not any(w in str(error) for w in _PROLOGUE_WORDS):
        return None
    named = [n for n in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount] if n in ("args", "kwargs")]
    if not named:
        return None
    return KeywordFnError(
        f"fusion_alias: {function.__qualname__ if hasattr(function, '__qualname__') else type(function).__name__!r} "
        f"has a parameter named {named[0]!r}: Thunder 0.2.6's prologue, def prologue(*args, **kwargs), cannot take "
        "a tensor under that name (plain thunder.jit fails too, with 'expected Tensor, got tuple'). Rename it")


def refusal_for(error: Exception) -> KeywordFnError | None:
    """The refusal for Thunder's failure on a keyword ``fn`` of a call inside the program (module Note), or None."""
    cause = error.__cause__
    if isinstance(cause, TypeError) and _THUNDER_WORDS in str(cause):
        return KeywordFnError(_message("a call of the jitted function or one inside it has"))
    return None
