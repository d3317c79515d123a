"""What a called function's container defaults and a numpy array hold, as a guard compares them.

Note [a default container of a function the program calls]
----------------------------------------------------------
Thunder 0.2.6's interpreter binds a parameter's default value as a constant: what the program reads of a
default list, dict or object (``cfg["k"]``, ``ks[0]``, ``o.lr``) is baked into the trace, and the prologue
checks none of it. ``fusion_alias.jit`` passes the jitted function's own such defaults as arguments
(mutable_defaults.py), but a function the program calls inside binds its defaults where nothing sees the
call, so once the user changed the container the compiled program kept the first call's number, silently
(session 35 probe, plain ``thunder.jit`` too)::

    def helper(x, cfg={"k": 2.0}):
        return x * cfg["k"]
    def f(x):
        return helper(x).add_(1)       # f(x); helper.__defaults__[0]["k"] = 3.0; f(x)
                                       # eager: x * 3 + 1;  was: x * 2 + 1

The interpreter does see ``helper`` itself: it reads it from ``f``'s globals (or a closure, or a module's
class), and outside_reads.py records it with its shape (object_shapes.py, Note [a function's code and
defaults]). So a function's shape now also holds :func:`default_contents`: the contents of each default
that is not a plain constant, taken down to numbers, strings and identities, and compared at each call
like the rest of the shape. A call after ``cfg["k"] = 3.0`` finds another shape and compiles its own
program, in which the interpreter reads 3.0. Example: ``default_contents(helper)`` is ``(("dict",
(("k", (float, "0x1.0000000000000p+1")),)),)`` (a float by its hex spelling: ``nan`` equals itself, and
``2`` and ``2.0`` and ``True`` differ, as they may in the program).

Taken, per default: numbers, strings, bytes and None by type and value; tuples, lists and dicts entry by
entry (a dict's keys in order); sets by their elements; a plain object by its attribute names and values;
a tensor, a module, a function, a class, a dtype, a device or an enum member by identity (a tensor's
values are the program's input, read at run time: Thunder keeps a tensor constant as the object). Past
``_MAX_DEPTH`` levels or ``_MAX_ITEMS`` entries the contents are a fresh object that equals nothing, so
each call compiles anew: slow, never a stale number. A function with no default or only constant ones
(the common case) costs one tuple test.
"""

from __future__ import annotations

import array
import collections
import enum
import functools
import types

import torch

from fusion_alias.mutable_defaults import _constant, user_class

_MAX_DEPTH = 8
_MAX_ITEMS = 100_000  # (about 50 ms a call to take; past it, compiling at each call)
_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_BY_IDENTITY = (torch.Tensor, torch.nn.Module, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                type, torch.dtype, torch.device, enum.Enum, types.ModuleType)


class _Unknown:
    """Contents too large or too deep to take: equal to nothing, itself included (each call compiles anew)."""

    __slots__ = ()

    def __eq__(self, other):
        return False

    def __hash__(self):
        return id(self)


class Same:
    """Objects compared by identity, and held, so that an id is never reused while a program keys by it (a
    function's defaults may hold tensors, which ``==`` would compare elementwise: object_shapes.py, Note [a
    function's code and defaults]; and what this module takes by identity)."""

    __slots__ = ("objs",)

    def __init__(self, *objs):
        self.objs = objs

    def __eq__(self, other):
        return (isinstance(other, Same) and len(self.objs) == len(other.objs)
                and all(a is b for a, b in zip(self.objs, other.objs)))

    def __hash__(self):
        return hash(tuple(id(o) for o in self.objs))


class _TooBig(Exception):
    pass


def default_contents(fn: types.FunctionType) -> tuple:
    """The contents of ``fn``'s defaults that are not plain constants, positional then keyword (module Note);
    ``()`` where there are none."""
    if not fn.__defaults__ and not fn.__kwdefaults__:
        return ()
    try:
        return _defaults_of(fn, _MAX_DEPTH, [_MAX_ITEMS])
    except _TooBig:
        return (_Unknown(),)


def _defaults_of(fn: types.FunctionType, depth: int, budget: list) -> tuple:
    defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
    if not defaults and not kwdefaults:
        return ()
    containers = [v for v in (defaults or ())
                  if type(v) is types.FunctionType or not _constant(v)  # (Note [a function held in a default])
                  or (isinstance(v, type) and _user_class(v))]  # (Note [a class or an object held in a default])
    keywords = tuple((k, _contents(v, depth, budget)) for k, v in (kwdefaults or {}).items())  # (Note [a keyword
    return (*(_contents(v, depth, budget) for v in containers), *keywords)  # default set in place])


# Note [a keyword default set in place]
# -------------------------------------
# ``__defaults__`` is a tuple: a new number there is a new tuple, which the function's shape holds by identity. But
# ``__kwdefaults__`` is a dict, changed in place as any dict: ``inner.__kwdefaults__["k"] = 3.0`` between calls of
# ``def inner(x, *, k=2.0)``, called by the program or given to it, ran the first call's 2.0 again, silently (session
# 38 probe; plain ``thunder.jit`` too). So every keyword-only default is taken, a constant too, by key and contents.


# Note [a function held in a default]
# -----------------------------------
# A default may hold a function whose own defaults hold a container (``def helper(x, f=inner)`` with ``def inner(x,
# cfg={"k": 2.0})``): the interpreter reads ``inner``'s defaults while tracing, through ``helper``'s, where nothing
# sees them. Taken by identity, ``inner``'s ``cfg["k"] = 3.0`` between calls ran the first call's number, silently
# (session 37 probe; plain ``thunder.jit`` too). So a function held in a default is taken with its code and
# defaults (by identity) and its defaults' contents, a bound method with its object (by identity) and its
# function, a ``functools.partial`` with its function, arguments and keywords.
def _contents(v, depth: int, budget: list):
    budget[0] -= 1
    if budget[0] < 0 or depth < 0:
        raise _TooBig
    tp = type(v)
    if tp is float:
        return (float, v.hex())
    if isinstance(v, _SCALARS):
        return (tp, v)
    if tp is types.FunctionType:  # Note [a function held in a default]
        return ("function", Same(v, v.__code__, v.__defaults__, v.__kwdefaults__), _defaults_of(v, depth - 1, budget),
                _cells_of(v, depth - 1, budget))
    if tp is types.MethodType:
        return ("method", Same(v.__self__), _contents(v.__func__, depth - 1, budget))
    if tp is functools.partial:
        return ("partial", _contents(v.func, depth - 1, budget), _contents(v.args, depth - 1, budget),
                _contents(v.keywords, depth - 1, budget))
    if isinstance(v, type) and _user_class(v):  # Note [a class or an object held in a default]
        return ("class", Same(v), _class_attributes(v, depth - 1, budget))
    if isinstance(v, _BY_IDENTITY):
        return Same(v)
    if tp is list or tp is tuple:
        return (tp, tuple(_contents(e, depth - 1, budget) for e in v))
    if isinstance(v, dict):
        return (tp, tuple((_contents(k, depth - 1, budget), _contents(e, depth - 1, budget)) for k, e in v.items()))
    if isinstance(v, (set, frozenset)):
        return (tp, tuple(sorted((_contents(e, depth - 1, budget) for e in v), key=repr)))
    if isinstance(v, (list, tuple)):  # (a namedtuple, a list subclass)
        return (tp, tuple(_contents(e, depth - 1, budget) for e in v))
    attributes = getattr(v, "__dict__", None)
    user = _user_class(tp)
    if isinstance(attributes, dict) and (user or not callable(v)):
        own = tuple((k, _contents(e, depth - 1, budget)) for k, e in sorted(attributes.items()))
        return (tp, own, _class_attributes(tp, depth - 1, budget)) if user else (tp, own)
    contents = mutable_contents(v)
    if contents is not None:
        return contents
    if user and attributes is None:  # (a ``__slots__`` object)
        slots = [k for klass in tp.__mro__ for k in _slot_names(klass)]
        return (tp, Same(v), tuple((k, _contents(getattr(v, k, _Unknown), depth - 1, budget)) for k in slots),
                _class_attributes(tp, depth - 1, budget))
    try:
        hash(v)
    except (TypeError, ValueError):
        return Same(v)
    return (tp, v)


# Note [the closure of a function held in a default]
# ---------------------------------------------------
# Such a function may read a closure cell (``k`` of ``def make(): k = 2.0; def g(x): return x * k``), which the
# interpreter reads while tracing, through the default, where Thunder's prologue checks nothing (it checks the cells
# of a function it reaches from a global or an argument): ``k = 3.0`` set through ``nonlocal`` between calls ran the
# first call's number, silently (session 38 probe; plain ``thunder.jit`` too). So a function held in a default is
# taken with its cells' contents too (an empty cell as ``_EMPTY``, a cell holding the function itself, a recursive
# inner function, by identity).
_EMPTY = ("empty cell",)


def _cells_of(fn: types.FunctionType, depth: int, budget: list) -> tuple:
    cells = fn.__closure__
    if not cells:
        return ()
    taken = []
    for cell in cells:
        try:
            e = cell.cell_contents
        except ValueError:
            taken.append(_EMPTY)
            continue
        taken.append(Same(e) if e is fn else _contents(e, depth, budget))
    return tuple(taken)


# Note [a class or an object held in a default]
# ---------------------------------------------
# Likewise a called function's default may hold a class (``def helper(x, C=Cfg)``, reading ``C.k``), an object
# with ``__slots__``, or an object with a ``__call__`` (``f=SCALER``, reading ``self.k``): taken by identity (or,
# for a callable object, by ``==``), ``Cfg.k = 3.0`` between calls ran the first call's number, silently (session 37
# probe; plain ``thunder.jit`` too). So a class defined outside torch, Thunder and numpy is taken with the data
# attributes and functions of its own ``__dict__`` and its bases' (not dunder names, not nested classes or other
# callables), an object of such a class with its attributes or slots and its class's.
_user_class = user_class  # (mutable_defaults.py: the libraries whose classes are not the user's)


def _class_attributes(cls, depth: int, budget: list) -> tuple:
    taken = []
    for klass in cls.__mro__:
        if not _user_class(klass):
            continue
        for k, e in vars(klass).items():
            if k.startswith("__"):
                continue
            if isinstance(e, (staticmethod, classmethod)):
                e = e.__func__
            if callable(e) and type(e) is not types.FunctionType:
                continue
            taken.append((klass.__qualname__, k, _contents(e, depth, budget)))
    return tuple(taken)


def _slot_names(klass) -> tuple:
    slots = vars(klass).get("__slots__", ())
    slots = (slots,) if isinstance(slots, str) else slots
    return tuple(k for k in slots if k not in ("__dict__", "__weakref__"))


# Note [a numpy array changed in place]
# -------------------------------------
# A numpy array the program reads (``float(ARR[0])``, ``a[0].item()``, of a global, an attribute or an argument)
# is read while tracing: Thunder 0.2.6 bakes the number into the trace and its prologue checks nothing of the
# array, and the guard compared the array by identity, so a change in place between calls ran the old number,
# silently (session 36 probe; plain ``thunder.jit`` too)::
#
#     LR = numpy.array([0.1])
#     def f(x): return x.mul_(float(LR[0]))      # f(x); LR[0] = 0.05; f(x)   eager: x * 0.05;  was: x * 0.1
#
# So an array's shape is the array (held) with its dtype, shape, strides and contents: its bytes up to
# ``_ARRAY_BYTES``, a digest of them above (a pass over the array at each call: large arrays belong in tensors).
_ARRAY_BYTES = 4096


# Note [a mutable sequence Thunder does not unpack]
# -------------------------------------------------
# The same holds for the other mutable sequences Thunder's prologue neither checks nor unpacks, a
# ``bytearray``, a ``memoryview``, an ``array.array`` and a ``collections.deque`` (``x.mul_(DQ[0])``,
# ``DQ[0] = 3.0`` between calls: the old number, silently, in plain ``thunder.jit`` too; a writable
# ``memoryview`` raised "cannot hash" in the guard), and the live views of a dict kept apart from it (a
# ``types.MappingProxyType``, ``D.keys()``, ``D.values()``, ``D.items()``: ``D`` changes, the view with it): each
# is compared by its contents, as :func:`mutable_contents` takes them. (``list`` and ``dict`` subclasses, ``OrderedDict``, ``Counter``,
# dataclasses and namedtuples holding lists are unpacked and checked by the prologue: right already.)
def mutable_contents(obj):
    """The contents of a numpy array, a ``bytearray``, a ``memoryview``, an ``array.array``, a ``deque``, a
    ``mappingproxy`` or a dict's keys, values or items view, as a
    guard compares them (Note [a numpy array changed in place], Note [a mutable sequence Thunder does not
    unpack]); None for any other object."""
    tp = type(obj)
    if tp is bytearray:
        return ("bytearray", bytes(obj))
    if tp is memoryview:
        try:
            return ("memoryview", Same(obj.obj), obj.format, obj.shape, obj.tobytes())
        except ValueError:  # (released)
            return ("memoryview", Same(obj))
    if tp is array.array:
        return ("array", obj.typecode, obj.tobytes())
    if tp is collections.deque or tp in _DICT_VIEWS:
        try:
            return (tp, getattr(obj, "maxlen", None), tuple(_contents(e, _MAX_DEPTH, [_MAX_ITEMS]) for e in obj))
        except _TooBig:
            return (tp, _Unknown())
    if tp is types.MappingProxyType:
        try:
            return (tp, _contents(dict(obj), _MAX_DEPTH, [_MAX_ITEMS]))
        except _TooBig:
            return (tp, _Unknown())
    if is_numpy_array(obj):
        return array_contents(obj)
    return None


_DICT_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))


def is_numpy_array(obj) -> bool:
    tp = type(obj)
    return tp.__name__ == "ndarray" and tp.__module__ == "numpy"


def array_contents(arr) -> tuple:
    """``("ndarray", held array, dtype, shape, strides, contents)`` (Note [a numpy array changed in place])."""
    if arr.dtype.hasobject:  # (Python objects inside: compared by identity of the array alone)
        return ("ndarray", Same(arr), _Unknown())
    data = arr.tobytes()
    if len(data) > _ARRAY_BYTES:
        import hashlib

        data = hashlib.blake2b(data, digest_size=16).digest()
    return ("ndarray", Same(arr), arr.dtype.str, arr.shape, arr.strides, data)
