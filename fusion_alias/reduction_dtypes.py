"""The ``dtype=`` of a reduction that eager refuses, refused as eager refuses it.

Note [a dtype= eager refuses]
-----------------------------
Eager checks the ``dtype=`` a reduction is given; Thunder 0.2.6 converts to it and computes, so these ran where
eager raises (session 34 probes, ``--generator dtype`` programs spelled with ``dtype=`` by hand; plain
``thunder.jit`` runs them too; missed rejections, no value eager computes differs)::

    x.mean(dtype=torch.int64)              # eager: "mean(): could not infer output dtype. Optional dtype must be
                                           #  either a floating point or complex dtype. Got: Long"; ran: the
                                           #  integer mean (and a bool one for dtype=torch.bool)
    torch.softmax(x, 0, dtype=torch.int64) # eager: NotImplementedError, no integer softmax kernel; ran: zeros
    x.cumsum_(0, dtype=torch.int64)        # eager: "Bad in-place call: input tensor dtype float and output tensor
                                           #  dtype long int should match"; ran: the float cumsum, the dtype dropped

So ``mean``/``nanmean`` with a ``dtype`` that is neither floating nor complex, ``softmax``/``log_softmax``
(``torch.``, ``torch.nn.functional.``, the methods) with an integer or bool ``dtype``, and ``cumsum_`` with a
``dtype`` other than the tensor's are refused with eager's words; every other ``dtype=`` goes to Thunder's
function as before (the dtypes Thunder refuses itself, ``mean(dtype=torch.uint8)``, raise there; ``cumprod_``
Thunder does not trace at all). The methods go through the ``torch.`` functions (``inplace_lookasides._getattr``):
a lookaside of the executor runs as Python calls it, where a proxy is a ``TensorProxy`` (bool_reductions.py).
"""

from __future__ import annotations

from functools import partial

import torch
import thunder.torch as ltorch
from thunder.core import dtypes

# ``Tensor.<name>`` methods traced as ``torch.<name>(tensor, ...)`` (the same signature), for the lookasides
# here and bool_reductions.py's
METHODS = frozenset({"sum", "prod", "mean", "nanmean", "softmax", "log_softmax"})


def method(name: str, proxy):
    """The bound method ``proxy.<name>`` for ``inplace_lookasides._getattr`` (``name`` in :data:`METHODS`)."""
    return partial(getattr(torch, name), proxy)


def _torch_dtype(dtype):
    return dtype if dtype is None or isinstance(dtype, torch.dtype) else dtypes.to_torch_dtype(dtype)


_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
          torch.bool: "Bool"}


def _name(dtype: torch.dtype) -> str:
    """Eager's name of ``dtype`` in these messages (``Long``, ``Int``, ``Bool``)."""
    return _NAMES.get(dtype, str(dtype))


def _mean(traced, *args, **kwargs):
    dtype = _torch_dtype(kwargs.get("dtype"))
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                           f"complex dtype. Got: {_name(dtype)}")
    return traced(*args, **kwargs)


def _softmax(name: str, position: int, traced, *args, **kwargs):
    dtype = _torch_dtype(kwargs.get("dtype", args[position] if len(args) > position else None))
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(f'"{name}" not implemented for \'{_name(dtype)}\' (fusion_alias: eager PyTorch has '
                                  f"no {name} of an integer or bool dtype)")
    return traced(*args, **kwargs)


INPLACE_CUMULATIVE = frozenset({"cumsum_"})  # (Thunder 0.2.6 has no ``cumprod_``: inplace_lookasides refuses it)


def inplace_cumulative(op: str, a, bound, *args, **kwargs):
    """``a.cumsum_(dim, dtype=d)`` (``bound``: Thunder's method), refused for a ``d`` other than
    ``a``'s dtype as eager refuses it. (Run by the interpreter: plain comparisons of dtypes only.)"""
    dtype = _torch_dtype(kwargs.get("dtype"))  # (keyword-only in eager)
    own = _torch_dtype(a.dtype)
    if dtype is not None and dtype != own:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {own} and output tensor dtype {dtype} should match "
                           f"(fusion_alias: Tensor.{op} writes its own tensor, eager refuses another dtype)")
    return bound(*args, **kwargs)


def register(executor) -> None:
    """Lend ``executor`` the lookasides of Note [a dtype= eager refuses] (the methods go through
    ``inplace_lookasides._getattr``, which asks :func:`method`)."""
    table = ltorch._torch_to_thunder_function_map
    checks = {torch.mean: _mean, torch.nanmean: _mean,
              torch.softmax: partial(_softmax, "softmax", 2), torch.log_softmax: partial(_softmax, "log_softmax", 2),
              torch.nn.functional.softmax: partial(_softmax, "softmax", 3),
              torch.nn.functional.log_softmax: partial(_softmax, "log_softmax", 3)}
    for fn, check in checks.items():
        if fn not in executor._lookasides and table.get(fn) is not None:
            executor._lookasides[fn] = partial(check, table[fn])
