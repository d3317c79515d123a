"""The shape of a Python object a guard compares: a list's length, a dict's keys, a plain object's
attribute names, and for a function, a class, a dtype or an enum member the object itself
(outside_reads.py, Note [the shape of a container read from outside the arguments])."""

from __future__ import annotations

import enum
import operator
import types

import torch

from fusion_alias.default_contents import Same, default_contents, mutable_contents  # (Same: re-exported)
from fusion_alias.mutable_defaults import user_class

NOT_PLAIN = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
             torch.nn.Module, torch.Tensor, torch.dtype, torch.device)


# compared as themselves (held, so that an id is never reused while a program keys by it); a getter of the operator
# module too: its names are part of what it reads (opaque_reads.py, Note [an attribute read through attrgetter])
BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, type, torch.dtype, enum.Enum, operator.attrgetter,
               operator.itemgetter)


class Live:
    """A held object whose shape is taken when asked: ``now()`` (module_tables.ModuleTables)."""

    __slots__ = ()

    def now(self):
        raise NotImplementedError


# Note [a function's code and defaults]
# -------------------------------------
# A function is the same object after ``f.__code__ = g.__code__`` or ``f.__defaults__ = (5,)``, and runs
# other code or with other defaults: Thunder's interpreter read them while tracing, and nothing checks them
# again (plain ``thunder.jit`` neither). So a function's shape is the function with its code, defaults and
# keyword defaults, each compared as the very object::
#
#     def helper(x, k=2): return x * k          # jitted: lambda x: helper(x) + 1
#     helper.__defaults__ = (5,)                 # eager: x * 5 + 1; was: x * 2 + 1 (session 34 probe)


def function_parts(fn) -> tuple | None:
    """``(code, defaults, keyword defaults)`` of a Python function, held and compared by identity (Note [a
    function's code and defaults]); None for anything else (a module, a builtin, a ``functools.partial``)."""
    if type(fn) is not types.FunctionType:
        return None
    return (fn.__code__, fn.__defaults__, fn.__kwdefaults__)


class Shape:
    """A shape as it was when the program read it (``shape_of`` of it is that)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


def _key_part(k):
    return k if type(k) in (str, int, bool, float) else ("id", id(k))


# (opaque_reads.py, Note [a container an opaque builtin reads]): a record's last key ``CONTENTS`` makes the guard's
# path follower take the scalars the container holds (``ScalarContents``), compared by value
CONTENTS = type("Contents", (), {"__repr__": lambda self: "CONTENTS", "__slots__": ()})()
_SCALARS = (int, float, complex, bool, str, type(None))
_MAX_SCALARS = 10_000


def _scalar(v):
    return (float, v.hex()) if type(v) is float else (type(v), v) if type(v) in _SCALARS else None


def scalar_contents(obj):
    """``(type, ((type, value), ...))`` of a list, tuple, set, dict (its items), mappingproxy or dict view holding only
    Python numbers, strings, bools and Nones (a dict's items as key-value pairs); None for anything else, or past
    10,000 entries. A class's dict (a mappingproxy) may also hold objects compared by identity (Note [a class's dict
    read whole])."""
    tp = type(obj)
    if tp is types.MappingProxyType:
        entries = [e for kv in obj.items() for e in kv]
        if len(entries) > _MAX_SCALARS:
            return None
        out = tuple(_scalar(e) or _by_identity(e) for e in entries)
        return None if any(e is None for e in out) else (tp, out)
    if isinstance(obj, (dict, types.MappingProxyType)):
        entries = [e for kv in obj.items() for e in kv]
    elif tp in (list, tuple) or tp in _SEQUENCE_VIEWS:
        entries = list(obj)
    elif tp in (set, frozenset):
        entries = sorted(obj, key=repr)
    else:
        return None
    if len(entries) > _MAX_SCALARS:
        return None
    out = tuple(_scalar(e) for e in entries)
    return None if any(e is None for e in out) else (tp, out)


_SEQUENCE_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))


# Note [a class's dict read whole]
# --------------------------------
# A class's dict holds its methods and descriptors beside its numbers, so ``scalar_contents`` had no answer for it,
# and a program that read the numbers through the whole dict (``for k, v in vars(Cfg).items()``, ``vars(Cfg).copy()``)
# kept the first call's values, silently (session 40 probe; plain ``thunder.jit`` too)::
#
#     class Cfg: scale = 2.0
#     def f(x): return x * vars(Cfg).copy()["scale"]     # f(x); Cfg.scale = 3.0; f(x)   eager: x * 3;  was: x * 2
#
# (``dict(vars(Cfg))`` and ``{**vars(Cfg)}``, copies the interpreter makes itself: opaque_reads.py, Note [a class's
# dict the interpreter copies].)
#
# Its entries other than numbers and strings are kept in the answer themselves, compared by identity (the answer
# holds them, so an id is never another object's). A class attribute replaced, a method too, compiles again.
#
# Session 41: an entry whose class compares otherwise (``__eq__`` of its own: a tensor, a dict, the
# ``__annotations__`` of a class with an annotated attribute) is held in a ``Same``, compared by identity too; it left
# the whole dict unanswered, and so unguarded: ``factor: float = 2.0`` beside a ``const = torch.tensor(1.)`` in a
# module's base class kept ``super().factor``'s first value (super_reads.py, Note [a number a module reads through
# super()]). What such an entry holds is not compared (a dict entry changed in place): a read of it is a path of its
# own, guarded as such; this record guards which object each name of the class is bound to.
def _by_identity(v):
    return ("object", v) if type(v).__eq__ is object.__eq__ else ("object", Same(v))


class ScalarContents:
    """What a guard compares of a container followed to ``CONTENTS``: its ``scalar_contents``."""

    __slots__ = ("key",)

    def __init__(self, obj):
        self.key = ("contents", scalar_contents(obj))


def shape_of(obj):
    """``("len", n)`` of a list or tuple, ``("keys", ...)`` of a dict (in order; a key that is not a plain
    number or string by its id), ``("function", ...)`` of a function (Note [a function's code and
    defaults]), ``("object", obj)`` of a builtin, a class, a dtype or an enum member,
    ``("attributes", class, names)`` of a plain object (Note [an object's class]), ``("value", type, obj)`` of
    another value Thunder's prologue does not check (Note [a value Thunder's prologue does not check]); None for
    anything else.

    >>> shape_of([1, 2]), shape_of({"m": 0}), shape_of(Shape(("len", 0)))
    (('len', 2), ('keys', ('m',)), ('len', 0))
    """
    if isinstance(obj, (Shape, ScalarContents)):
        return obj.key
    tp = type(obj)
    if isinstance(obj, Live):  # (module_tables.py, Note [hooks added or removed between calls])
        return obj.now()
    if isinstance(obj, torch.nn.Module):  # (held: compared by identity; Note [a submodule replaced between calls])
        return ("module", id(obj), obj)
    if tp is list or tp is tuple:
        return ("len", len(obj))
    if isinstance(obj, dict):
        return ("keys", tuple(_key_part(k) for k in obj))
    if tp is types.FunctionType:  # (Note [a function's code and defaults])
        return ("function", Same(obj, *function_parts(obj)), default_contents(obj))  # (Note [a default container of a function the program calls])
    if tp is type and user_class(obj):  # (Note [a class's attribute names])
        return ("class", obj, tuple(tuple(vars(k)) for k in obj.__mro__ if user_class(k)))
    if isinstance(obj, BY_IDENTITY):
        return ("object", obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, NOT_PLAIN) and (not callable(obj) or _user_callable(tp)):
        return ("attributes", Same(tp), tuple(sorted(vars(obj))))  # (Note [an object's class])
    if is_opaque_value(obj):  # Note [a value Thunder's prologue does not check]
        contents = mutable_contents(obj)  # (default_contents.py, Note [a numpy array changed in place])
        if contents is not None:
            return contents
        if tp is set:
            try:
                return ("set", frozenset(obj))
            except TypeError:
                return ("object", Same(obj))
        try:
            hash(obj)
        except (TypeError, ValueError):  # (a writable memoryview raises ValueError; mutable_contents takes it first)
            return ("object", Same(obj))
        return ("value", tp, obj)
    return None


# Note [an object's class]
# ------------------------
# ``isinstance(o, A)``, ``type(o) is A`` and ``issubclass(type(o), A)`` are answered while tracing (Thunder's
# interpreter runs them opaquely) and Thunder 0.2.6's prologue checks the attributes the program read of ``o``,
# never its class: ``f(x, A())``, then ``f(x, B())`` of a class with the same attribute names ran ``A``'s branch
# again, silently (session 38 probe; plain ``thunder.jit`` too; an argument, a global or an attribute alike). So a
# plain object's shape holds its class, by identity, with its attribute names; an object of a user's class with a
# ``__call__`` too (``callable(o)`` of ``A()``, then ``C()``, then ``A()`` again ran ``C``'s program, whose guard held
# nothing of ``o``).


# Note [a class's attribute names]
# --------------------------------
# ``hasattr(Cfg, "flag")`` and ``getattr(Cfg, "k", 2.0)`` of a class are answered while tracing, like an object's
# (outside_reads.py, Note [the shape of a container read from outside the arguments]), but a class was taken by
# identity alone: ``Cfg.flag = 1`` (or ``del Cfg.k``) between calls ran the first call's branch again, silently
# (session 38 probe; plain ``thunder.jit`` too; a global class, one reached through ``type(o)``, an inherited
# attribute alike). So a class of the user's (a plain ``type``: not torch's, Thunder's or Python's) is taken with the
# names in its own ``__dict__`` and its user bases', in order; a value set on a name already there is the
# prologue's to check, as before.
def _user_callable(tp) -> bool:
    """An object of this class with a ``__call__`` is taken as a plain object (Note [an object's class]): a class of
    the user's, not a ``functools`` wrapper (a ``partial``, an ``lru_cache``), keyed by identity elsewhere."""
    return user_class(tp) and tp.__module__ != "functools"


# Note [a value Thunder's prologue does not check]
# ------------------------------------------------
# Thunder 0.2.6's prologue checks the numbers and strings a program reads from a global, a closure or an
# attribute (``int``, ``float``, ``complex``, ``bool``, ``str`` and their subclasses), and unpacks tuples, lists
# and dicts to their entries; a value of another type (``numpy.int64``, ``range``, ``bytes``, ``frozenset``, a
# ``set``, ``torch.layout``, ``...``) is used as it was while tracing and checked by nothing (session 35 probe;
# plain ``thunder.jit`` too)::
#
#     N = numpy.int64(2)
#     def f(x): return x.mul_(int(N))     # f(x); N = numpy.int64(3); f(x)   eager: x * 3;  was: x * 2
#
# Such a value's shape is the value itself (compared with ``==``, its type too), a set's its elements, and one
# that cannot be hashed is compared by identity (a numpy array by its contents too: default_contents.py, Note [a
# numpy array changed in place]).
def is_opaque_value(obj) -> bool:
    """Whether ``obj`` is a value Thunder's prologue does not check and ``shape_of`` keys by value (Note [a value
    Thunder's prologue does not check])."""
    return not (obj is None or isinstance(obj, _CHECKED) or isinstance(obj, NOT_PLAIN) or isinstance(obj, BY_IDENTITY)
                or hasattr(obj, "__dict__") or callable(obj))


_CHECKED = (int, float, complex, str, tuple, list, dict)  # (by Thunder's prologue, or unpacked to what it checks)
