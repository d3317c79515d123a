"""The shape of a Python object a guard compares: a list's length, a dict's keys, a plain object's
attribute names, and for a function, a class, a dtype or an enum member the object itself
(outside_reads.py, Note [the shape of a container read from outside the arguments])."""

from __future__ import annotations

import enum
import types

import torch

NOT_PLAIN = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
             torch.nn.Module, torch.Tensor, torch.dtype, torch.device)


# compared as themselves (held, so that an id is never reused while a program keys by it)
BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, type, torch.dtype, enum.Enum)


class Live:
    """A held object whose shape is taken when asked: ``now()`` (module_tables.ModuleTables)."""

    __slots__ = ()

    def now(self):
        raise NotImplementedError


class Shape:
    """A shape as it was when the program read it (``shape_of`` of it is that)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


def _key_part(k):
    return k if type(k) in (str, int, bool, float) else ("id", id(k))


def shape_of(obj):
    """``("len", n)`` of a list or tuple, ``("keys", ...)`` of a dict (in order; a key that is not a plain
    number or string by its id), ``("object", obj)`` of a function, a class, a dtype or an enum member,
    ``("attributes", ...)`` of a plain object; None for anything else.

    >>> shape_of([1, 2]), shape_of({"m": 0}), shape_of(Shape(("len", 0)))
    (('len', 2), ('keys', ('m',)), ('len', 0))
    """
    if isinstance(obj, Shape):
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
    if isinstance(obj, BY_IDENTITY):
        return ("object", obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, NOT_PLAIN) and not callable(obj):
        return ("attributes", tuple(sorted(vars(obj))))
    return None
