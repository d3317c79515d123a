"""Numbers eager converts to an op's dtype, and the result type of an in-place clamp, checked on the trace.

Note [a number eager converts to the op's dtype]
------------------------------------------------
Some ops take a Python number that eager converts to the dtype it computes in, with an overflow check
(torch 2.9.1, ``checked_convert``)::

    h = torch.ones(3, dtype=torch.float16)
    h.clamp_(0, 1e10); h.pow_(1e10); h.add_(h, alpha=1e10)   # "value cannot be converted to type
    h.masked_fill_(m, 1e10); F.hardtanh(h, -1e5, 1e5)        #  at::Half without overflow"
    torch.zeros(3, dtype=torch.int32).fill_(2**31)           # ... to type int ...

Plain ``thunder.jit`` runs most of these with torch and raises as eager does; a fused region runs
Thunder's decomposition, and returned ``inf`` or a wrapped integer instead (session 30 probe). Which
dtype the number is converted to depends on the op (``_OPERANDS``): the op's result type (``clamp``,
``pow``, an ``add``'s ``alpha``: ``clamp(int32, 0, 1e10)`` computes in float32 and runs), ``self``'s
dtype (``fill_``, ``masked_fill``, ``threshold``, ``hardtanh``, ``hardshrink``), or the type
``addcmul``/``addcdiv`` multiply in (float32 for half and bfloat16 tensors). The overflow rule is
eager's: a floating dtype takes any value up to its largest finite one, and infinities and NaN; an
integer dtype takes the values in its range (a fractional one compared before truncation: ``int8``
takes -0.5, not 127.5), and an unsigned one also negative integers down to minus its largest (they
wrap: ``uint8.fill_(-1)`` is 255). One exception is eager's own: ``fill_`` of a one-element float16 or
bfloat16 tensor does not check (it stores ``inf``), so neither does this.

Note [a Python int no torch scalar holds]
-----------------------------------------
Before any dtype, eager converts a Python int operand to a scalar of 64 bits, signed or not, and raises
for one that fits neither (``x.add_(2**64)``, ``x * 2**64``, ``torch.where(m, x, -2**63 - 1)``:
``OverflowError: int too big to convert``), whatever the tensor's dtype. Thunder 0.2.6 keeps the int in
the trace, and a fused region computed with it as a float (``1.8446744073709552e+19``; session 32 fuzz,
dtype seed 40150 #20, #25). ``check_int_operands`` raises eager's error for an int outside ``[-2**63,
2**64)`` among any op's arguments (and inside its list and tuple arguments).

Note [the result type of an in-place clamp]
-------------------------------------------
``a.clamp_(lo, hi)`` computes at the result type of ``a``, ``lo`` and ``hi`` and stores it into
``a``; eager refuses the store where that type cannot be cast to ``a``'s::

    torch.ones(3, dtype=torch.bool).clamp_(0, 2)   # result type Long can't be cast to ... bool
    torch.arange(3).clamp_(0, 0.5)                 # result type Float can't be cast to ... long int

Thunder 0.2.6 clamps in ``a``'s dtype, so no cast shows in the trace (``dtype_rules``' store check
sees none) and the program ran (plain ``thunder.jit`` too).
"""

from __future__ import annotations

import math

import torch
from thunder.core.dtypes import is_inexact_dtype, to_torch_dtype
from thunder.core.proxies import TensorProxy

#: op name -> (the number operands' (position, keyword) pairs, the dtype they are converted to:
#: "result" (the op's result type), "self" (its first operand's dtype) or "opmath")
_CLAMP_BOUNDS = ((1, "min"), (2, "max"))
_OPERANDS = {
    **{name: (((2, "alpha"),), "result") for name in ("add", "add_", "sub", "sub_", "rsub")},
    **{name: (((1, "exponent"),), "result") for name in ("pow", "pow_")},
    **{name: (_CLAMP_BOUNDS, "result") for name in ("clamp", "clamp_", "clip", "clip_")},
    **{name: (((1, "min"),), "result") for name in ("clamp_min", "clamp_min_")},
    **{name: (((1, "max"),), "result") for name in ("clamp_max", "clamp_max_")},
    **{name: (((2, "value"),), "self") for name in ("masked_fill", "masked_fill_")},
    "fill_": (((1, "value"),), "self"),
    **{name: (((1, "threshold"), (2, "value")), "self") for name in ("threshold", "threshold_")},
    **{name: (((1, "min_val"), (2, "max_val")), "self") for name in ("hardtanh", "hardtanh_")},
    "hardshrink": (((1, "lambd"),), "self"),
    **{name: (((3, "value"),), "opmath") for name in ("addcmul", "addcmul_", "addcdiv", "addcdiv_")},
}
_IN_PLACE_CLAMPS = frozenset({"clamp_", "clip_", "clamp_min_", "clamp_max_"})
_CLAMPS = _IN_PLACE_CLAMPS | {"clamp", "clip", "clamp_min", "clamp_max"}
_TENSOR_OPERANDS = {"add": 2, "sub": 2, "rsub": 2, "pow": 2, "clamp": 3, "clip": 3, "clamp_min": 2,
                    "clamp_max": 2, "addcmul": 3, "addcdiv": 3}
_NAMES = {torch.float16: "at::Half", torch.bfloat16: "at::BFloat16", torch.float32: "float", torch.float64: "double",
          torch.uint8: "uint8_t", torch.int8: "int8_t", torch.int16: "int16_t", torch.int32: "int", torch.int64: "int64_t"}


_TORCH_DTYPES: dict = {}  # Thunder's dtype -> torch's, or None where torch has none


def _torch_dtype(p):
    dtype = p.dtype
    found = _TORCH_DTYPES.get(dtype, _TORCH_DTYPES)
    if found is _TORCH_DTYPES:
        try:
            found = to_torch_dtype(dtype)
        except Exception:  # noqa: BLE001 - a dtype torch does not know: nothing to say
            found = None
        _TORCH_DTYPES[dtype] = found
    return found


def _number(b, position: int, keyword: str):
    value = b.kwargs.get(keyword, b.args[position] if len(b.args) > position else None)
    return value if type(value) in (int, float) else None  # (not bool, complex or a number proxy)


_LARGEST: dict = {}  # a floating dtype -> its largest finite value
_HALF_LARGEST = 65504.0  # (float16's: the smallest of them)


def overflows(value, dtype: torch.dtype) -> bool:
    """Whether eager's conversion of the Python number ``value`` to ``dtype`` overflows (module Note)."""
    if dtype.is_floating_point:
        largest = _LARGEST.get(dtype)
        if largest is None:
            largest = _LARGEST[dtype] = torch.finfo(dtype).max
        if -largest <= value <= largest:
            return False
        return type(value) is int or math.isfinite(value)  # (infinities and NaN are allowed)
    if dtype is torch.bool or dtype.is_complex:
        return False
    info = torch.iinfo(dtype)
    if type(value) is float:  # (compared as it is, before any truncation: int8 takes -0.5, not 127.5)
        return not math.isfinite(value) or value < info.min or value > info.max
    if info.min == 0:  # (unsigned: a negative integer wraps, down to minus the largest)
        return value > info.max or value < -info.max
    return value > info.max or value < info.min


def _result_dtype(b, name: str, numbers: list):
    """The dtype eager computes ``b`` in: its tensors' one dtype where no number promotes it, else asked of
    torch's own op on meta tensors; None where it cannot be told."""
    base = name.rstrip("_")
    count = _TENSOR_OPERANDS.get(base, 1)
    operands = list(b.args[:count])
    tensors = [a for a in operands if isinstance(a, TensorProxy)]
    dtypes = {_torch_dtype(t) for t in tensors}
    if len(dtypes) == 1 and None not in dtypes:
        (dtype,) = dtypes
        if dtype.is_floating_point or dtype.is_complex or (dtype is not torch.bool and all(type(v) is int for v in numbers)):
            return dtype  # (a number of the tensors' kind or below does not promote them)
    if None in dtypes or not hasattr(torch, base):
        return None
    metas = []
    for a in operands:
        if isinstance(a, TensorProxy):
            metas.append(torch.empty(tuple(a.shape), dtype=_torch_dtype(a), device="meta"))
        elif a is None or isinstance(a, (bool, int, float, complex)):
            metas.append(a)
        else:
            return None  # (a number proxy: not asked)
    kwargs = {k: v for k, v in b.kwargs.items() if k in ("min", "max") and (v is None or type(v) in (int, float, bool))}
    try:
        return getattr(torch, base)(*metas, **kwargs).dtype
    except Exception:  # noqa: BLE001 - eager's own error, if any, comes from the run
        return None


def check_number_operands(b, name: str) -> None:
    """Raise eager's error where a number operand of ``b`` overflows the dtype eager converts it to, or a
    clamp has no kernel or its in-place store is refused (module Notes)."""
    positions, rule = _OPERANDS[name]
    numbers = [v for v in (_number(b, p, k) for p, k in positions) if v is not None]
    self_ = b.args[0] if b.args else None
    if not isinstance(self_, TensorProxy):
        return
    if name not in _CLAMPS and all(-_HALF_LARGEST <= v <= _HALF_LARGEST for v in numbers) and (
            is_inexact_dtype(self_.dtype) or (rule == "result" and all(type(v) is float for v in numbers))):
        return  # (``p.add_(g, alpha=-lr)``: a number every floating dtype holds, and a floating result)
    result = None
    if name in _CLAMPS:
        result = _check_clamp(b, name, self_, numbers, positions)
    if not numbers:
        return
    if rule == "self":
        dtype = _torch_dtype(self_)
        if name == "fill_" and dtype in (torch.float16, torch.bfloat16) and math.prod(self_.shape) == 1:
            return  # (eager's one-element fill does not check: module Note)
    else:
        dtype = result if result is not None else _result_dtype(b, name, numbers)
        if rule == "opmath" and dtype in (torch.float16, torch.bfloat16):
            dtype = torch.float32  # (addcmul and addcdiv multiply in float32 there)
    if dtype is None:
        return
    for value in numbers:
        if overflows(value, dtype):
            raise RuntimeError(
                f"fusion_alias: {name}: value {value!r} cannot be converted to type {_NAMES.get(dtype, dtype)} "
                "without overflow (eager PyTorch rejects this too)")


def _check_clamp(b, name: str, self_: TensorProxy, numbers: list, positions):
    """Note [the result type of an in-place clamp]; and eager's missing bool kernel: a clamp computed in
    bool is refused unless its one bound is a tensor (``b.clamp_(c)`` is ``maximum``). The result type,
    where asked (else None)."""
    self_dtype = _torch_dtype(self_)
    if self_dtype is not torch.bool and name not in _IN_PLACE_CLAMPS:
        return None  # (an out-of-place clamp of a tensor that is not bool: Thunder's result type is eager's)
    result = _result_dtype(b, name, numbers)
    bounds = [v for v in (b.kwargs.get(k, b.args[p] if len(b.args) > p else None) for p, k in positions)
              if v is not None]
    if result is torch.bool and not (len(bounds) == 1 and isinstance(bounds[0], TensorProxy)):
        raise NotImplementedError(
            f"fusion_alias: {name} of a bool tensor: not implemented for 'Bool' (eager PyTorch has no clamp "
            "kernel for bool tensors with number bounds or two tensor bounds, and rejects this too)")
    if name in _IN_PLACE_CLAMPS and result is not None and self_dtype is not None and not torch.can_cast(
            result, self_dtype):
        raise RuntimeError(
            f"fusion_alias: {name}: result type {result} can't be cast to the desired output type "
            f"{self_dtype} of {self_.name} (eager PyTorch rejects this too; Thunder 0.2.6 clamps in "
            f"{self_.name}'s dtype)")
    return result


_INT_LOW, _INT_END = -(2**63), 2**64  # (a 64-bit scalar, signed or not: Note [a Python int no torch scalar holds])


def check_int_operands(b, name: str) -> None:
    """Raise eager's OverflowError for a Python int argument of ``b`` no 64-bit scalar holds (Note [a Python
    int no torch scalar holds])."""
    _check_ints(b.args, name)
    if b.kwargs:
        _check_ints(b.kwargs.values(), name)


def _check_ints(values, name: str) -> None:
    for value in values:
        tp = type(value)
        if tp is int:
            if not _INT_LOW <= value < _INT_END:
                _int_too_big(name, value)
        elif tp is list or tp is tuple:
            _check_ints(value, name)


def _int_too_big(name: str, value: int):
    raise OverflowError(
        f"fusion_alias: {name}: the Python int {value} does not fit a 64-bit integer, signed or unsigned: "
        f"{'int too big to convert' if value > 0 else 'cannot convert negative int to unsigned'} (eager PyTorch "
        "rejects this too)")


#: the checks by op name, for ``dtype_rules``' table (Note [the dtype checks in one walk])
CHECKS = {name: check_number_operands for name in _OPERANDS}
