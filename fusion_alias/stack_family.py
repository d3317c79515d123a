"""``torch.hstack``, ``vstack``, ``row_stack``, ``dstack`` and ``column_stack`` as the ``cat`` they are.

Note [the stacks' gradient]
---------------------------
Thunder 0.2.6 traces the five stacks as symbols of their own, and in a call that computes gradients their result
does not require grad: the part of the gradient that flows through them was dropped, silently, where eager's
``hstack`` is a ``cat`` and passes it (session 40, helper-67's probe; plain ``thunder.jit`` too)::

    def f(a, b): return torch.hstack([a, b]) * 2 + a      # f(a, b).sum().backward(): eager a.grad 3, was 1

Each is written here as eager defines it, a ``cat`` of views of its operands, which Thunder differentiates:

- ``hstack``: ``cat(atleast_1d(t) ...)`` along dim 0 where every operand is 1-d after that, else dim 1;
- ``vstack``, ``row_stack``: ``cat(atleast_2d(t) ...)`` along dim 0;
- ``dstack``: ``cat(atleast_3d(t) ...)`` along dim 2;
- ``column_stack``: each operand of at most one dimension as a column (``reshape(numel, 1)``), ``cat`` along dim 1.

A call with ``out=`` goes where it went before (out_arguments.py refuses it).
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch

_STACKS = ("hstack", "vstack", "row_stack", "dstack", "column_stack")


def _column(t):
    return ltorch.reshape(t, (t.numel, 1)) if t.ndim <= 1 else t


def _stacked(name: str, tensors):
    ts = list(tensors)
    if name == "hstack":
        ts = [ltorch.atleast_1d(t) for t in ts]
        return ltorch.cat(ts, 0 if all(t.ndim == 1 for t in ts) else 1)
    if name in ("vstack", "row_stack"):
        return ltorch.cat([ltorch.atleast_2d(t) for t in ts], 0)
    if name == "dstack":
        return ltorch.cat([ltorch.atleast_3d(t) for t in ts], 2)
    return ltorch.cat([_column(t) for t in ts], 1)


def _lookaside(name: str, previous):
    def traced(*args, **kwargs):
        if kwargs.get("out") is not None or len(args) + len(kwargs) - ("out" in kwargs) != 1:
            return previous(*args, **kwargs)
        tensors = args[0] if args else kwargs.get("tensors")
        if tensors is None or not isinstance(tensors, (list, tuple)) or not tensors:
            return previous(*args, **kwargs)
        return _stacked(name, tensors)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [the stacks' gradient], over what was lent before for each."""
    table = ltorch._torch_to_thunder_function_map
    for name in _STACKS:
        fn = getattr(torch, name, None)
        symbol = table.get(fn) if fn is not None else None
        if symbol is not None:
            executor._lookasides[fn] = _lookaside(name, executor._lookasides.get(fn, symbol))
