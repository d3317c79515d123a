"""Named results: ``x.max(0).values``, ``torch.topk(x, 2).indices`` inside a compiled function.

Note [named results]
--------------------
Eager returns ``torch.return_types.max`` (a struct sequence) from ``x.max(0)``: a tuple whose items
are also ``values`` and ``indices``. Thunder 0.2.6 traces these ops as plain tuples, so
``x.max(dim=1).values``, a common spelling, raised a bare ``AttributeError: values`` in
``thunder.jit`` and in fusion_alias (session 25 note). The lookasides here call Thunder's own symbol
and hand its tuple back as a :class:`_Named` tuple, whose fields are the struct sequence's::

    r = torch.max(x, 0)           # traced as before: t0, t1 = torch_max(x, 0)
    r.values * 2                  # t0 * 2
    v, i = x.sort(1)              # a tuple still
    return r                      # the caller gets a torch.return_types.max, as from eager

Two details keep this a tuple wherever Thunder looks: Thunder's interpreter rebuilds a container
as ``type(v)(items)``, and its pytree as ``type(v)(*items)``, so the constructor takes either form;
and the trace prints a returned one through ``repr``, which spells eager's own struct sequence
(``torch.return_types.max((t0, t1,))``), so the compiled function returns what eager returns.
"""

from __future__ import annotations

import collections
from functools import partial

import torch
import thunder.torch as ltorch

from fusion_alias import min_max

# the ops whose eager result is a struct sequence of ``torch.return_types`` with the same name (torch 2.9.1)
NAMES = ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "aminmax", "cummax", "cummin",
         "frexp")


def _named_tuple_class(name: str) -> type:
    fields = getattr(torch.return_types, name).__match_args__
    base = collections.namedtuple(name, fields)

    def __new__(cls, *items):
        if len(items) == 1 and len(fields) > 1:  # (the interpreter's ``type(v)(items)``)
            items = tuple(items[0])
        return base.__new__(cls, *items)

    def __repr__(self):  # (Note [named results]: how the trace spells a returned one)
        return f"torch.return_types.{name}((" + "".join(f"{item!r}, " for item in self) + "))"

    # (``__module__``: Thunder's ``tree_flatten`` takes a tuple it does not know as a namedtuple by its
    # ``__repr__``, replaced here, or as eager's own by this module name)
    return type(name, (base,), {"__slots__": (), "__new__": __new__, "__repr__": __repr__,
                                "__module__": "torch.return_types"})


_CLASSES = {name: _named_tuple_class(name) for name in NAMES}


def _named(symbol, cls, *args, **kwargs):
    """``symbol(*args, **kwargs)``, a tuple of ``cls``'s length as ``cls`` (a single tensor as it is)."""
    result = symbol(*args, **kwargs)
    if isinstance(result, (tuple, list)) and len(result) == len(cls._fields):
        return cls(*result)
    return result


def _symbol(name: str, fn):
    """What traces ``fn`` (``torch.<name>`` or ``Tensor.<name>``): min_max.py's for max and min (Note [max
    along a dim hands its gradient to the index it returns]), Thunder's own otherwise (None: it has none)."""
    return min_max.SYMBOLS.get(name) or ltorch._torch_to_thunder_function_map.get(fn)


def method(name: str, proxy):
    """The bound method ``proxy.<name>`` for :func:`inplace_lookasides._getattr`, or None when ``name`` is
    not one of :data:`NAMES` (or Thunder has no symbol for it)."""
    cls = _CLASSES.get(name)
    symbol = _symbol(name, getattr(torch.Tensor, name, None)) if cls else None
    return partial(_named, symbol, cls, proxy) if symbol is not None else None


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [named results] for the ``torch.*`` functions (the
    ``Tensor`` methods go through ``inplace_lookasides._getattr``, which asks :func:`method`)."""
    for name, cls in _CLASSES.items():
        fn = getattr(torch, name, None)
        symbol = _symbol(name, fn)
        if symbol is not None and fn not in executor._lookasides:
            executor._lookasides[fn] = partial(_named, symbol, cls)
