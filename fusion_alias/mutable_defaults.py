"""A default argument that holds a list, a dict or an object: passed as an argument, so that the guard sees it.

Note [a number read from a default argument's container]
--------------------------------------------------------
A parameter's default value is one object for every call, and a program may keep state in it on purpose
(``def step(x, cfg={"lr": 0.1})``, ``def f(x, hist=[])``, ``def f(x, opt=OPT)``). Thunder 0.2.6's interpreter
reads a default as a constant: the numbers the program reads from it (``cfg["lr"]``) are baked into the trace and
its prologue checks none of them, so once the user changes one between calls the compiled program keeps the old
number, silently (session 35 probe; plain ``thunder.jit`` too)::

    S = {"lr": 0.1}
    def f(x, s=S):
        return x.sub_(s["lr"] * x)  # f(x); S["lr"] = 0.05; f(x): eager subtracts 0.05 * x, was 0.1 * x again

A global dict read the same way is checked (Thunder's prologue follows the path from the function's globals),
and so is an argument's. So ``fusion_alias.jit`` passes each default that is not a plain constant (a number, a
string, None, a dtype, a tuple of those) and that the call leaves out as a keyword argument of the call: the
same object eager's call binds, now reached from the arguments, where the guard key and Thunder's prologue check
what the program reads of it (its tensors' aliasing too). Positional-only parameters are left as they are. A
replaced ``__defaults__`` compiles anew already (object_shapes.py, Note [a function's code and defaults]).
A module's ``forward`` defaults are passed the same way (``m(x)`` called as ``m(x, s=S)``). The defaults of a
function the program calls inside (``helper(x)`` with ``def helper(x, s={...})``) cannot be passed: Thunder reads
them as constants there, and nothing here sees the call; the guard compares their contents instead
(default_contents.py, Note [a default container of a function the program calls]).
"""

from __future__ import annotations

import types

import torch

_CONSTANTS = (int, float, complex, bool, str, bytes, type(None), torch.dtype, torch.device, type(Ellipsis))


def _constant(v) -> bool:
    """A default the program cannot see change: not a Python function nor a class of the user's (Note [a function
    or a class in the jitted function's own default])."""
    if isinstance(v, tuple):
        return all(_constant(e) for e in v)
    return (isinstance(v, _CONSTANTS) or isinstance(v, types.BuiltinFunctionType)
            or (isinstance(v, type) and not user_class(v)))


# Note [a function or a class in the jitted function's own default]
# ------------------------------------------------------------------
# A Python function held in the jitted function's own default is the same object after its default dict changes in
# place or its ``__defaults__``/``__kwdefaults__``/``__code__`` are replaced, and a class after its attributes
# (or a base's) are set; the interpreter reads them while tracing. Taken for constants here, they were bound as
# constants and nothing checked them, so the first call's number ran again, silently (session 38 probe; plain
# ``thunder.jit`` too)::
#
#     def inner(x, c={"k": 2.0}): return x * c["k"]
#     class Cfg: k = 2.0
#     def f(x, g=inner, C=Cfg): return x.add_(g(x) * C.k)
#     # f(x); inner.__defaults__[0]["k"] = 3.0 (or Cfg.k = 3.0); f(x)   eager: the new number;  was: the old one
#
# So they are passed as keyword arguments like the containers above (a tuple holding one too), where the guard keys
# a function with its code, defaults and their contents (guard.py, Note [a function or a dtype given as an
# argument]) and Thunder's prologue checks what the program reads of a class. Builtins and classes of torch,
# Thunder, numpy and Python's own modules stay constants (``act=torch.relu``, ``cls=torch.nn.ReLU``).
_LIBRARIES = ("builtins", "torch", "thunder", "numpy", "fusion_alias", "abc", "enum", "typing", "collections")


def user_class(cls) -> bool:
    """A class defined outside torch, Thunder, numpy and Python's own modules listed in ``_LIBRARIES``."""
    return str(getattr(cls, "__module__", "")).split(".")[0] not in _LIBRARIES


def default_filler(fn):
    """``fill(args, kwargs) -> (args, kwargs)`` passing the container defaults the call leaves out (module Note),
    or None where there are none (a ``functools.partial``, a builtin, only constant defaults). For a module, the
    defaults of its class's ``forward`` where it has such defaults (looked up again at each call then: a class
    whose ``forward`` is replaced)."""
    if isinstance(fn, torch.nn.Module):
        return _ModuleFiller(type(fn)) if _filler_of(_forward_of(type(fn)), 1) is not None else None
    return _filler_of(fn, 0)


def _forward_of(cls):
    return getattr(cls, "forward", None)


class _ModuleFiller:
    """The filler of a module's class's ``forward``, made again where the class's ``forward`` is replaced."""

    def __init__(self, cls):
        self.cls = cls
        self.forward = _forward_of(cls)
        self.fill = _filler_of(self.forward, 1)

    def __call__(self, args: tuple, kwargs: dict):
        forward = _forward_of(self.cls)
        if forward is not self.forward:
            self.forward, self.fill = forward, _filler_of(forward, 1)
        return (args, kwargs) if self.fill is None else self.fill(args, kwargs)


def _filler_of(fn, bound: int):
    """The filler of function ``fn`` called with ``bound`` leading arguments already bound (a method's self)."""
    if type(fn) is not types.FunctionType:
        return None
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount]
    defaults = fn.__defaults__ or ()
    first = len(names) - len(defaults)
    positional = [(i - bound, names[i], v) for i, v in enumerate(defaults, start=first)
                  if i >= code.co_posonlyargcount and not _constant(v)]
    # (a keyword-only ``fn`` is left to Thunder, which reads it while tracing, and api.py keys it by its shape:
    # keyword_fn.py, Note [a keyword argument named fn])
    keyword = [(k, v) for k, v in (fn.__kwdefaults__ or {}).items() if not _constant(v) and k != "fn"]
    if not positional and not keyword:
        return None

    def fill(args: tuple, kwargs: dict):
        added = {name: v for i, name, v in positional if i >= len(args) and name not in kwargs}
        added.update((k, v) for k, v in keyword if k not in kwargs)
        return (args, {**kwargs, **added}) if added else (args, kwargs)

    return fill


# Note [the jitted function's own keyword defaults set in place]
# --------------------------------------------------------------
# api.py compiles anew where the jitted function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` is replaced
# (object_shapes.py, Note [a function's code and defaults]), taking each by identity. ``__kwdefaults__`` is a dict,
# though, set in place as any dict: ``f.__kwdefaults__["k"] = 3.0`` between calls of ``def f(x, *, k=2.0)`` ran the
# first call's 2.0 again (a constant: Thunder binds it while tracing), and ``f.__kwdefaults__["s"] = {"k": 3.0}``
# the old dict (the filler above passes the objects it took when it was made), silently (session 38 probe; plain
# ``thunder.jit`` too). So the parts kept also hold the keyword defaults' values, compared by identity at each call
# (one tuple test for a function without keyword-only defaults, the common case).
def own_parts(fn) -> tuple | None:
    """``(code, defaults, keyword defaults, their items)`` of the jitted function, or None for anything but a
    Python function (Note [the jitted function's own keyword defaults set in place])."""
    if type(fn) is not types.FunctionType:
        return None
    kw = fn.__kwdefaults__
    return (fn.__code__, fn.__defaults__, kw, tuple(kw.items()) if kw else ())


def own_parts_changed(fn, parts: tuple) -> bool:
    """Whether ``fn``'s code or defaults were replaced, or a keyword default set in place, since ``parts``."""
    code, defaults, kw, items = parts
    if fn.__code__ is not code or fn.__defaults__ is not defaults or fn.__kwdefaults__ is not kw:
        return True
    return bool(kw) and (len(kw) != len(items) or any(kw.get(k, items) is not v for k, v in items))
