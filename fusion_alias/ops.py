"""The op table: which Thunder prims fusion_alias fuses, and what each one is.

One entry per prim, keyed by ``PrimIDs`` name. Every entry says

* its *kind*: ``elementwise``, ``view``, ``reduction``, ``write`` (``copy_``),
  ``alias`` (``update_aliases``) or ``creation``;
* its nvFuser spelling (``fd.ops.<name>``), used by the lowering;
* its torch implementation, used by the reference backend.

Anything not in the table is *unsupported*: it stays outside fusion regions and
Thunder's torch executor runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import thunder.core.prims as prims
from thunder.core.dtypes import to_torch_dtype

PrimIDs = prims.PrimIDs


@dataclass(frozen=True)
class OpInfo:
    kind: str  # elementwise | view | reduction | write | alias | creation
    nv_name: str  # name under nvFuser's ``fd.ops``
    torch_fn: Callable | None  # reference implementation, on torch values


def _unary(fn):
    return lambda a: fn(a)


def _binary(fn):
    def impl(a, b):
        if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
            return fn(torch.tensor(a), torch.tensor(b))
        return fn(a, b)

    return impl


def torch_div(a, b):
    """Thunder's ``prims.div``: true division, except that it truncates when both operands
    are integers (or bool) -- ``torch.div(a, b, rounding_mode="trunc")`` reaches us as a
    bare ``prims.div`` on integers, and nvFuser's ``div`` truncates them too."""
    result = torch.result_type(a, b)
    if not (result.is_floating_point or result.is_complex):
        return torch.div(a, b, rounding_mode="trunc")
    return torch.true_divide(a, b)


_UNARY = {
    "ABS": ("abs", torch.abs),
    "ACOS": ("acos", torch.acos),
    "ACOSH": ("acosh", torch.acosh),
    "ASINH": ("asinh", torch.asinh),
    "ATANH": ("atanh", torch.atanh),
    "ERFC": ("erfc", torch.erfc),
    "ERFINV": ("erfinv", torch.erfinv),
    "LGAMMA": ("lgamma", torch.lgamma),
    "ASIN": ("asin", torch.asin),
    "ATAN": ("atan", torch.atan),
    "CEIL": ("ceil", torch.ceil),
    "COS": ("cos", torch.cos),
    "COSH": ("cosh", torch.cosh),
    "ERF": ("erf", torch.erf),
    "EXP": ("exp", torch.exp),
    "EXP2": ("exp2", torch.exp2),
    "EXPM1": ("expm1", torch.expm1),
    "FLOOR": ("floor", torch.floor),
    "LOG": ("log", torch.log),
    "LOG1P": ("log1p", torch.log1p),
    "LOG2": ("log2", torch.log2),
    "NEG": ("neg", torch.neg),
    "RECIPROCAL": ("reciprocal", torch.reciprocal),
    "ROUND": ("round", torch.round),
    "RSQRT": ("rsqrt", torch.rsqrt),
    "SIGN": ("sign", torch.sign),
    "SIN": ("sin", torch.sin),
    "SINH": ("sinh", torch.sinh),
    "SQRT": ("sqrt", torch.sqrt),
    "TAN": ("tan", torch.tan),
    "TANH": ("tanh", torch.tanh),
    "TRUNC": ("trunc", torch.trunc),
    "BITWISE_NOT": ("bitwise_not", torch.bitwise_not),
    "ISFINITE": ("isfinite", torch.isfinite),
}

_BINARY = {
    "ADD": ("add", torch.add),
    "SUB": ("sub", torch.sub),
    "MUL": ("mul", torch.mul),
    "DIV": ("div", torch_div),
    "POW": ("pow", torch.pow),
    "ATAN2": ("atan2", torch.atan2),
    "FMOD": ("fmod", torch.fmod),
    "REMAINDER": ("remainder", torch.remainder),
    "MAXIMUM": ("maximum", torch.maximum),
    "MINIMUM": ("minimum", torch.minimum),
    "EQ": ("eq", torch.eq),
    "NE": ("ne", torch.ne),
    "LT": ("lt", torch.lt),
    "LE": ("le", torch.le),
    "GT": ("gt", torch.gt),
    "GE": ("ge", torch.ge),
    "BITWISE_AND": ("bitwise_and", torch.bitwise_and),
    "BITWISE_OR": ("bitwise_or", torch.bitwise_or),
    "BITWISE_XOR": ("bitwise_xor", torch.bitwise_xor),
}


def torch_broadcast_in_dim(a, shape, broadcast_dimensions):
    view_shape = [1] * len(shape)
    for src_dim, dst_dim in enumerate(broadcast_dimensions):
        view_shape[dst_dim] = a.shape[src_dim]
    return a.reshape(view_shape).expand(tuple(shape))


def _slice(a, start_indices, end_indices, strides=None):
    strides = strides if strides is not None else [1] * len(start_indices)
    return a[tuple(slice(s, e, st) for s, e, st in zip(start_indices, end_indices, strides))]


def _convert(a, dtype):
    if isinstance(a, torch.Tensor):
        return a.to(to_torch_dtype(dtype))
    return dtype(a) if isinstance(dtype, type) else a


def torch_where(pred, a, b):
    """``prims.where``. A Python number beside a tensor takes the tensor's dtype as eager promotes a
    number: ``torch.where`` takes the number itself and promotes so (``torch.result_type``), where a
    ``torch.tensor(3.0)`` made of it first was a float32 0-dim tensor, which beside a 0-dim bfloat16 ``a``
    made the result float32 (eager: bfloat16; hostile probe 12, fuzz 19407 #15). (Making that tensor
    with the promoted dtype was right too, and cost a ``torch.tensor`` per number per call: ~10 us each,
    8 of an 8-block MLP's 880 us call, session 34.)"""
    return torch.where(pred if isinstance(pred, torch.Tensor) else torch.tensor(pred), a, b)


def _full(shape, fill_value, *, device, dtype):
    return torch.full(tuple(shape), fill_value, device=str(device), dtype=to_torch_dtype(dtype))


# Note [the dtype of an integer sum]
# A sum or prod prim of an int8/int16/int32/uint8 tensor has its operand's dtype in Thunder's trace
# (``x.sum(dtype=torch.int32)`` decomposes to ``prims.sum`` of int32 and no cast after it), where
# torch's ``sum`` and nvFuser's are int64 unless told: the fused result was int64 and did not wrap as
# eager's. A sum of a bool tensor is the other way round: Thunder's own decompositions count with it
# (the ties of ``w.min()``'s gradient: ``prims.sum`` of a bool mask, typed bool in the trace, then a
# division by it), so it stays torch's int64 count.
_NARROW_INTS = frozenset({torch.int8, torch.int16, torch.int32, torch.uint8})


def _reduced_dtype(a):
    """The dtype a sum or prod prim of ``a`` computes in (Note [the dtype of an integer sum]); None: torch's."""
    return a.dtype if a.dtype in _NARROW_INTS else None


def torch_prod(a, dims):
    out = a
    for d in sorted(dims, reverse=True):
        out = out.prod(d, dtype=_reduced_dtype(a))
    return out if dims else a.clone()


def torch_pad(a, padding_value, padding_config):
    """``prims.pad`` with no interior padding: ``padding_config`` is ``(low, high, 0)`` per dimension."""
    if any(interior for _, _, interior in padding_config):
        raise NotImplementedError("fusion_alias: pad with interior padding")
    return torch_pad_widths(a, [w for lo, hi, _ in reversed(padding_config) for w in (lo, hi)], padding_value)


def torch_pad_widths(a, pad_widths, value):
    """nvFuser's ``pad`` (``pad_widths`` as torch's: last dimension first, ``(low, high)`` each, none
    negative), for every dtype: ``torch.nn.functional.pad`` takes no complex fill value (fuzz seed 1
    #1612, a complex tensor written through two views)."""
    n = len(pad_widths) // 2
    lows = [pad_widths[2 * (n - 1 - d)] for d in range(n)]
    highs = [pad_widths[2 * (n - 1 - d) + 1] for d in range(n)]
    lead = a.ndim - n
    shape = list(a.shape[:lead]) + [s + lo + hi for s, lo, hi in zip(a.shape[lead:], lows, highs)]
    out = a.new_full(shape, value)
    out[(slice(None),) * lead + tuple(slice(lo, lo + s) for s, lo in zip(a.shape[lead:], lows))] = a
    return out


def torch_lerp(start, end, weight):
    """``prims.lerp``: ``start + weight * (end - start)`` (``torch.optim.Adam`` writes ``exp_avg.lerp_(grad, 1 - beta1)``)."""
    as_t = lambda x: x if isinstance(x, torch.Tensor) else torch.tensor(x)  # noqa: E731
    return torch.lerp(as_t(start), as_t(end), weight)


_OTHER = {
    "LERP": OpInfo("elementwise", "lerp", torch_lerp),
    # a copy into new memory; layouts.py puts one before each reshape that copies in eager
    "CLONE": OpInfo("elementwise", "set", lambda a, **_: a.clone(memory_format=torch.contiguous_format)),
    "WHERE": OpInfo("elementwise", "where", torch_where),
    "CONVERT_ELEMENT_TYPE": OpInfo("elementwise", "cast", _convert),
    "BROADCAST_IN_DIM": OpInfo("view", "broadcast_in_dim", torch_broadcast_in_dim),
    "RESHAPE": OpInfo("view", "reshape", lambda a, shape: a.reshape(tuple(shape))),
    "SLICE": OpInfo("view", "slice", _slice),
    "SQUEEZE": OpInfo("view", "squeeze", lambda a, dims: a.squeeze(tuple(dims)) if dims else a.view_as(a)),
    "TRANSPOSE": OpInfo("view", "permute", lambda a, permutation: a.permute(tuple(permutation))),
    "SHALLOW_COPY": OpInfo("view", "set", lambda a: a.view_as(a)),
    "SUM": OpInfo("reduction", "sum", lambda a, dims: a.sum(tuple(dims), dtype=_reduced_dtype(a)) if dims else a.clone()),
    "AMAX": OpInfo("reduction", "max", lambda a, dims: a.amax(tuple(dims)) if dims else a.clone()),
    "AMIN": OpInfo("reduction", "min", lambda a, dims: a.amin(tuple(dims)) if dims else a.clone()),
    "PROD": OpInfo("reduction", "prod", torch_prod),
    "FULL": OpInfo("creation", "full", _full),
    # a new tensor from its argument's values (base_updates.py places a written view back into its base)
    "PAD": OpInfo("creation", "pad", torch_pad),
    "COPY_": OpInfo("write", "add_output", None),
    "UPDATE_ALIASES": OpInfo("alias", "update_aliases", None),
}


OP_TABLE: dict[PrimIDs, OpInfo] = {}
for _name, (_nv, _fn) in _UNARY.items():
    OP_TABLE[PrimIDs[_name]] = OpInfo("elementwise", _nv, _unary(_fn))
for _name, (_nv, _fn) in _BINARY.items():
    OP_TABLE[PrimIDs[_name]] = OpInfo("elementwise", _nv, _binary(_fn))
for _name, _info in _OTHER.items():
    OP_TABLE[PrimIDs[_name]] = _info

#: prims that make a new tensor sharing the memory of their first argument
VIEW_IDS = frozenset(i for i, info in OP_TABLE.items() if info.kind == "view")
#: views that keep every element at its place: the result *is* the argument's memory
IDENTITY_VIEW_IDS = frozenset({PrimIDs.SHALLOW_COPY})
ELEMENTWISE_IDS = frozenset(i for i, info in OP_TABLE.items() if info.kind == "elementwise")
REDUCTION_IDS = frozenset(i for i, info in OP_TABLE.items() if info.kind == "reduction")
COPY_ID = PrimIDs.COPY_
UPDATE_ALIASES_ID = PrimIDs.UPDATE_ALIASES

#: dtypes nvFuser (and so the fusion regions) accept; others fall back to torch
FUSIBLE_TORCH_DTYPES = frozenset(
    {
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int32,
        torch.int64,
        torch.bool,
        torch.complex64,
        torch.complex128,
    }
)


# Note [prim lookups by identity]
# ``PrimIDs`` is an ``Enum``, whose ``__hash__`` is Python code: every ``in
# VIEW_IDS`` or ``OP_TABLE[...]`` on a 100k-bsym trace pays a Python call. The
# hot tests below look members up by ``id()`` instead. Members live as long as
# the module, so an object with a member's id *is* that member: the answers are
# the same as the enum lookups (non-PrimIDs ids never match, as before).
_OP_BY_ADDR: dict[int, OpInfo] = {id(pid): info for pid, info in OP_TABLE.items()}
_VIEW_ADDRS = frozenset(id(pid) for pid in VIEW_IDS)
_IDENTITY_VIEW_ADDRS = frozenset(id(pid) for pid in IDENTITY_VIEW_IDS)


def op_info(bsym) -> OpInfo | None:
    """The table entry for a bound symbol, or None where it is not fusible."""
    return _OP_BY_ADDR.get(id(bsym.sym.id))  # Note [prim lookups by identity]


def is_view(bsym) -> bool:
    return id(bsym.sym.id) in _VIEW_ADDRS  # Note [prim lookups by identity]


def is_copy(bsym) -> bool:
    return bsym.sym.id == COPY_ID


def is_update_aliases(bsym) -> bool:
    return bsym.sym.id == UPDATE_ALIASES_ID


__all__ = ["OpInfo", "OP_TABLE", "op_info", "is_view", "is_copy", "is_update_aliases"]
