"""Eager PyTorch's dtype rules for in-place ops, checked on the trace.

Note [in-place result types]
----------------------------
An in-place op computes its result at the promoted type of its operands and
then stores it into ``self``. Eager refuses the store when the result type
cannot be cast to ``self``'s dtype under ``torch.can_cast``::

    a = torch.arange(4)          # int64
    a.div_(2)                    # true division: float32 result -> RuntimeError
    a.mul_(1.5); a.add_(f32)     # float result -> RuntimeError
    torch.ones(3, dtype=bool).add_(1)      # int64 result -> RuntimeError
    f32.add_(c64)                # complex result -> RuntimeError

Thunder decomposes ``a.div_(2)`` into ``t = div(a, 2.0); copy_(t, a)`` and its
``copy_`` casts whatever it gets, so without this check the program returns a
truncated value where eager raises (plain ``thunder.jit`` too). The check looks
at each in-place op as traced (a top-level symbol tagged ``IN_PLACE``) and
compares the dtype of the value its ``copy_`` stores (before the cast Thunder
inserts right before the ``copy_``) with the destination's.

Not checked here: ops that eager lets cast freely (``copy_``, ``fill_``,
``zero_``, ``masked_fill_``, ``a[key] = v``) and index ops, whose stricter
"same dtype" rule Thunder enforces itself. One extra eager rule: ``abs_`` on a
complex tensor is refused ("In-place abs is not supported for complex
tensors"), although float -> complex is a legal cast.
"""

from __future__ import annotations

import functools

import torch
import thunder.core.prims as prims
from thunder.core import devices
from thunder.core import dtypes as thunder_dtypes
from thunder.core.proxies import TensorProxy

from fusion_alias import scalar_ranges
from fusion_alias.scalar_ranges import _torch_dtype, check_int_operands  # (a proxy's torch dtype, or None; remembered per dtype)
from fusion_alias.eager_kernels import check_kernel
from fusion_alias.aliasing import copies_in

#: in-place ops whose store eager casts without the can_cast rule, or checks otherwise
_CASTING_OPS = frozenset(
    {
        "copy_",
        "fill_",
        "zero_",
        "masked_fill_",
        "setitem_",
        "__setitem__",
        "index_add_",
        "index_copy_",
        "index_fill_",
        "index_put_",
        "scatter_",
        "scatter_add_",
        "scatter_reduce_",
        "put_",
        "masked_scatter_",
    }
)
_COMPLEX_REFUSED = frozenset({"abs_", "absolute_"})


class InplaceDtypeError(RuntimeError):
    """An in-place op whose result eager cannot store into its destination."""


def _producers(bsym, out=None) -> dict:
    """Output name -> the symbol producing it, over ``bsym``'s direct subsymbols."""
    out = {} if out is None else out
    for sub in bsym.subsymbols:
        for o in sub.flat_outs:
            if isinstance(o, TensorProxy):
                out.setdefault(o.name, sub)
    return out


def _before_cast(src, produced: dict):
    """The op's result: Thunder casts it to the destination's dtype right before its
    ``copy_`` (``t2 = convert_element_type(t1, int64); copy_(t2, a)``), eager does not."""
    b = produced.get(getattr(src, "name", None))
    if b is not None and b.sym.id is prims.PrimIDs.CONVERT_ELEMENT_TYPE and isinstance(b.args[0], TensorProxy):
        return b.args[0]
    return src


# Note [ops whose result is floating for integer operands]
# --------------------------------------------------------
# True division, ``atan2`` and ``copysign`` compute in floating point whatever their operands (eager
# promotes integer and bool operands to the default dtype), so in place on an integer or bool tensor
# eager always refuses the store (torch 2.9.1)::
#
#     torch.arange(3).copysign_(torch.arange(3))   # "result type Float can't be cast to ... Long"
#     b.div_(c); b.true_divide_(c); b.atan2_(c)    # b, c bool: "... to the desired output type Bool"
#     a.div_(2, rounding_mode="floor")             # integer division: an integer result, runs
#
# Thunder 0.2.6 types ``copysign`` of integers as an integer, and the bool operands' skip below (where
# eager computes in bool) let the bool ones through: both returned a value (hostile probe). The unary
# floating ops (``sqrt_``, ``exp_``) need no rule: Thunder's result is floating too, refused below.
_FLOAT_RESULT = frozenset({"div_", "true_divide_", "atan2_", "arctan2_", "copysign_"})


def _check_float_result(b, name: str) -> None:
    """Note [ops whose result is floating for integer operands]."""
    dst = b.args[0] if b.args else None
    if name not in _FLOAT_RESULT or not isinstance(dst, TensorProxy) or not thunder_dtypes.is_exact_dtype(dst.dtype):
        return
    if b.kwargs.get("rounding_mode") is not None:
        return  # (floor or trunc division of integers is an integer)
    floats = [d for d in map(_torch_dtype, (a for a in b.args[:2] if isinstance(a, TensorProxy)))
              if d is not None and (d.is_floating_point or d.is_complex)]
    have = functools.reduce(torch.promote_types, floats) if floats else torch.get_default_dtype()
    raise InplaceDtypeError(
        f"fusion_alias: {name}: result type {have} can't be cast to the desired output type {_torch_dtype(dst)} of "
        f"{dst.name} ({name[:-1]} of integer or bool tensors is floating point; eager PyTorch rejects this too)")


def _bool_operand(a) -> bool:
    return (isinstance(a, TensorProxy) and _torch_dtype(a) is torch.bool) or isinstance(a, bool)


def _check_inplace_store(b, name: str) -> None:
    """Raise :class:`InplaceDtypeError` where eager refuses the store of the in-place op ``b`` (module Note)."""
    convert = prims.PrimIDs.CONVERT_ELEMENT_TYPE
    copy_id = prims.PrimIDs.COPY_
    # the cast Thunder puts before copy_ is a direct subsymbol; without one, nothing to look through
    casts = nested = False
    direct = []  # the copy_ prims among the direct subsymbols: all of copies_in(b) unless one nests
    for sub in b.subsymbols:
        sym_id = sub.sym.id
        if sym_id is copy_id:
            direct.append(sub)
        elif sub.subsymbols:
            nested = True
        if sym_id is convert:
            casts = True
    produced = _producers(b) if casts else None
    for c in (copies_in(b) if nested else direct):
        src, dst = (_before_cast(c.args[0], produced) if produced else c.args[0]), c.args[1]
        if not (isinstance(src, TensorProxy) and isinstance(dst, TensorProxy)):
            continue
        if src._dtype is dst._dtype and name not in _COMPLEX_REFUSED:  # (the ``dtype`` property's field)
            continue  # one dtype: torch.can_cast(d, d) holds
        have, want = _torch_dtype(src), _torch_dtype(dst)
        if have is None or want is None:
            continue
        if name in _COMPLEX_REFUSED and want.is_complex:
            raise InplaceDtypeError(
                f"fusion_alias: {name}: In-place abs is not supported for complex tensors "
                "(eager PyTorch rejects this too)"
            )
        if want is torch.bool and len(b.args) > 1 and all(map(_bool_operand, b.args)):
            # bool operands: eager computes in bool (``b.add_(c, alpha=2)``, ``b.pow_(True)``); Thunder's int8
            # or int64 casts back alike (those eager refuses in bool: above, and _OP_CHECKS)
            continue
        if not torch.can_cast(have, want):
            raise InplaceDtypeError(
                f"fusion_alias: {name}: result type {have} can't be cast to the desired output type "
                f"{want} of {dst.name} (eager PyTorch rejects this too; Thunder 0.2.6 would cast silently)"
            )


# Note [ops eager has no kernel for]
# ----------------------------------
# Eager rejects some ops by their operands' dtypes where Thunder's decomposition computes anyway;
# plain thunder.jit raises as eager does (its torch executor runs eager's op), but a fused region runs
# the decomposition and returned a value (hostile probe 12)::
#
#     torch.lerp(int32_a, b, 0.3)   # eager: "lerp_kernel_scalar" not implemented for 'Int'; fused: a float
#     x - (x > 0)                   # eager: subtraction with a bool tensor is not supported
#     int_x.addcdiv_(a, b)          # eager: integer division with addcdiv is no longer supported
#     int_x.addcmul_(a, b, value=0.5)   # eager casts the value to the integer type (0): x unchanged;
#                                       # Thunder multiplies by 0.5 first (refused: its result differs)
#     f32_x.addcdiv_(int_a, int_b)      # eager: integer division, by tensor1 and tensor2 alone
#     f16_x.lerp_(f32_y, 0.3)           # eager: expected dtype Half for `end` (also `weight`, not 0-d)
#
# and by bool operands, where eager has no bool kernel and Thunder computes in int8 or int64 (``b ** c``
# returned int64). Run on CPU; on CUDA torch's kernel sources (read, not run) list no Bool for these
# either, but for ``abs`` (``abs_cuda`` has one: ``b.abs()`` is refused on CPU tensors only)::
#
#     b.floor_(); b.ceil(); b.round(); b.trunc_(); b.abs()   # "floor_vml_cpu" not implemented for 'Bool'
#     b ** c; b.pow_(c); True ** c                          # "pow" not implemented for 'Bool'
#     b.addcmul_(c, d)                                      # "addcmul_cpu_out" not implemented for 'Bool'
#     b ** True                                             # runs: eager's b.clone(), a bool; Thunder's
#                                                           # int64 (refused: its dtype differs); b.pow_(True) runs
_LERP_NAMES = frozenset({"lerp", "lerp_"})
_ADDCDIV_NAMES = frozenset({"addcdiv", "addcdiv_"})
_ADDCMUL_NAMES = frozenset({"addcmul", "addcmul_"})
_SUB_NAMES = frozenset({"sub", "sub_", "rsub", "__sub__", "__rsub__", "__isub__"})
_ALPHA_NAMES = frozenset({"add", "add_", "sub", "sub_", "rsub"})
_NO_BOOL_KERNEL = frozenset({"ceil", "ceil_", "floor", "floor_", "round", "round_", "trunc", "trunc_", "fix", "fix_"})
_POW_NAMES = frozenset({"pow", "pow_"})
_NO_BOOL_KERNEL_ON_CPU = frozenset({"abs", "abs_", "absolute", "absolute_"})
_TORCH_TYPE_NAMES = {torch.int8: "Char", torch.uint8: "Byte", torch.int16: "Short", torch.int32: "Int",
                     torch.int64: "Long", torch.bool: "Bool"}


def _check_lerp(b, name: str) -> None:
    _check_lerp_operands(b, name)
    start = b.args[0] if b.args else None
    dtype = _torch_dtype(start) if isinstance(start, TensorProxy) else None
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(
            f'fusion_alias: {name}: "lerp_kernel_scalar" not implemented for '
            f"'{_TORCH_TYPE_NAMES.get(dtype, dtype)}' (eager PyTorch rejects this too)")


def _check_bool_sub(b, name: str) -> None:
    """A bool tensor or a Python bool (``x - True``, ``x.sub_(False)``) on either side: eager's error."""
    if any(isinstance(a, bool) or (isinstance(a, TensorProxy) and thunder_dtypes.is_boolean_dtype(a.dtype))
           for a in b.args[:2]):
        raise RuntimeError(
            f"fusion_alias: {name}: Subtraction, the `-` operator, with a bool tensor is not supported. If you "
            "are trying to invert a mask, use the `~` or `logical_not()` operator instead (eager PyTorch "
            "rejects this too)")


def _check_no_bool_kernel(b, name: str) -> None:
    _check_bool_kernel(b, name, b.args[:1])


def _check_no_bool_kernel_on_cpu(b, name: str) -> None:
    if _on_cpu(b.args[0]):
        _check_bool_kernel(b, name, b.args[:1])


def _check_bool_kernel(b, name: str, operands) -> None:
    """Eager's error where every operand is bool (Note [ops eager has no kernel for])."""
    tensors = [a for a in operands if isinstance(a, TensorProxy)]
    if tensors and all(_torch_dtype(t) is torch.bool for t in tensors):
        raise NotImplementedError(
            f"fusion_alias: {name}: not implemented for 'Bool' (eager PyTorch has no {name.rstrip('_')} kernel for "
            "bool tensors and rejects this too)")


def _on_cpu(t) -> bool:
    return isinstance(t, TensorProxy) and t.device.devicetype is devices.DeviceType.CPU


def _check_bool_pow(b, name: str) -> None:
    """``b ** c`` and ``True ** c`` of bool tensors: no kernel; ``b ** True``: Thunder's dtype is not eager's."""
    base, exponent = (tuple(b.args) + (None, None))[:2]
    if isinstance(exponent, TensorProxy) and isinstance(base, (bool, TensorProxy)):
        _check_bool_kernel(b, name, (base, exponent) if isinstance(base, TensorProxy) else (exponent,))
    elif name == "pow" and isinstance(base, TensorProxy) and _torch_dtype(base) is torch.bool and isinstance(
            exponent, bool):
        raise NotImplementedError(
            f"fusion_alias: {name} of a bool tensor by {exponent}: eager PyTorch returns a bool tensor, Thunder 0.2.6 "
            f"an int64 one, and a fusion would return that: not supported. Workaround: "
            f"{'x.clone()' if exponent else 'torch.ones_like(x)'}")


def _check_alpha(b, name: str) -> None:
    """Eager's checks of ``alpha`` against the result type of ``add``/``sub`` (torch 2.9.1's ``alpha_check``)::

        f32.sub_(y, alpha=True)     # "Boolean alpha only supported for Boolean results."
        b.add_(c, alpha=0.5)        # "For integral input tensors, argument alpha must not be a floating point ..."
        int_a.add(2.5, alpha=0.5)   # runs: the result is floating
    """
    alpha = b.kwargs.get("alpha", b.args[2] if len(b.args) > 2 else None)
    if not isinstance(alpha, (bool, float, complex)):
        return  # (an int, None or a number proxy: every result type takes it)
    if type(alpha) is float and any(isinstance(a, TensorProxy) and thunder_dtypes.is_inexact_dtype(a.dtype)
                                    for a in b.args[:2]):
        return  # (a floating or complex tensor operand makes the result so: ``p.add_(g, alpha=-lr)``, asked of
        # no meta tensors, 20k times on the bench's ``wide`` trace)
    result = _eager_result_type(b.args[:2])
    if result is None:
        return
    if isinstance(alpha, bool):
        problem = None if result is torch.bool else "Boolean alpha only supported for Boolean results."
    elif isinstance(alpha, complex):
        problem = None if result.is_complex else (
            "For non-complex input tensors, argument alpha must not be a complex number.")
    else:
        problem = None if result.is_floating_point or result.is_complex else (
            "For integral input tensors, argument alpha must not be a floating point number.")
    if problem:
        raise RuntimeError(f"fusion_alias: {name} with alpha={alpha!r}: {problem} (eager PyTorch rejects this too)")


def _eager_result_type(operands):
    """The dtype eager computes two operands in (a 0-d tensor promotes as eager's do), or None."""
    if len(operands) != 2 or not any(isinstance(o, TensorProxy) for o in operands):
        return None
    dtypes = [_torch_dtype(o) if isinstance(o, TensorProxy) else None for o in operands]
    if any(isinstance(o, TensorProxy) and d is None for o, d in zip(operands, dtypes)):
        return None
    if not all(isinstance(o, (TensorProxy, bool, int, float, complex)) for o in operands):
        return None  # (a number proxy: its type is not asked)
    return torch.result_type(*(torch.empty((1,) * o.ndim, dtype=d, device="meta") if d is not None else o
                               for o, d in zip(operands, dtypes)))


def _check_lerp_operands(b, name: str) -> None:
    """Eager requires ``end`` (and a ``weight`` tensor that is not 0-d) of ``start``'s dtype."""
    start, end, weight = (tuple(b.args) + (None, None, None))[:3]
    weight = b.kwargs.get("weight", weight)
    if not isinstance(start, TensorProxy):
        return
    for what, t in (("end", end), ("weight", weight)):
        if isinstance(t, TensorProxy) and t.dtype != start.dtype and (what == "end" or t.ndim > 0):
            raise RuntimeError(
                f"fusion_alias: {name}: expected dtype {_torch_dtype(start)} for `{what}` but got dtype "
                f"{_torch_dtype(t)} (eager PyTorch rejects this too)")


# Note [a result type Thunder infers from a 0-d tensor's history]
# ---------------------------------------------------------------
# Thunder 0.2.6 types a tensor made by shape ops from a 0-d tensor as if it were still 0-d when it
# promotes: with ``a`` float64 and ``d`` a float16 (1, 6) tensor, ``a[5].view(1, 1) + d`` is float64 in
# eager (two tensors with dimensions) and ``f16[1, 6]`` in Thunder's trace (also ``a.sum().view(1)``,
# ``a[5][None]``, ``a[5].expand(1, 1)``). Plain ``thunder.jit`` runs ``ltorch.add`` with torch and
# returns eager's float64 anyway; a fusion region runs the decomposition the trace typed and returned
# float16, silently (fuzz seed 20126 #108, dtype). Where the operands' dtypes differ, the result type of
# the op is asked of torch on meta tensors of the operands' shapes; a trace that disagrees is refused.
_PROMOTING = frozenset({"add", "sub", "mul", "true_divide", "div", "where", "maximum", "minimum", "pow", "atan2",
                        "remainder", "fmod", "hypot", "copysign", "lerp", "addcmul", "addcdiv"})


def _check_result_dtype(b, name: str) -> None:
    tensors = [a for a in b.args if isinstance(a, TensorProxy)]
    out = b.output
    if len({t.dtype for t in tensors}) < 2 or not isinstance(out, TensorProxy):
        return  # (one dtype among the operands: Thunder's rule is eager's)
    args = []
    for a in b.args:
        if isinstance(a, TensorProxy):
            dtype = _torch_dtype(a)
            if dtype is None:
                return
            args.append(torch.empty(tuple(a.shape), dtype=dtype, device="meta"))
        elif isinstance(a, (bool, int, float, complex)):
            args.append(a)
        else:
            return  # (a number proxy or anything else: not asked)
    kwargs = {k: v for k, v in b.kwargs.items() if isinstance(v, (bool, int, float, complex, str)) or v is None}
    try:
        want = getattr(torch, name)(*args, **kwargs).dtype
    except Exception:  # noqa: BLE001 - torch's own error comes from the run, not from this check
        return
    got = _torch_dtype(out)
    if got is not None and got != want:
        raise NotImplementedError(
            f"fusion_alias: {name} of {', '.join(f'{_torch_dtype(t)} {tuple(t.shape)}' for t in tensors)}: eager "
            f"PyTorch's result is {want} for these dtypes (as traced), Thunder 0.2.6's trace says {got} (it promotes a "
            "tensor made from a 0-d one by shape ops, or by a reduction, as if it were still 0-d), and a fusion would "
            "return that: not supported. "
            "Workaround: convert the operands to one dtype with .to(...) first"
        )



def _check_integer_addc(b, name: str) -> None:
    tensors = [a for a in b.args[:3] if isinstance(a, TensorProxy)]
    divisors = tuple(b.args[1:3])  # (tensor1, tensor2: integer or bool, whatever self is: f32.addcdiv_(int_a, int_b))
    if name in _ADDCDIV_NAMES and len(divisors) == 2 and all(
            isinstance(t, TensorProxy) and thunder_dtypes.is_exact_dtype(t.dtype) for t in divisors):
        raise RuntimeError(
            f"fusion_alias: {name}: Integer division with addcdiv is no longer supported (eager PyTorch rejects "
            "this too); use torch.floor_divide or true division on floating tensors")
    if name in _ADDCMUL_NAMES:
        _check_bool_kernel(b, name, tensors)
    if not tensors or not all(thunder_dtypes.is_exact_dtype(t.dtype) for t in tensors):
        return  # (a floating operand: eager's ordinary rules)
    value = b.kwargs.get("value", b.args[3] if len(b.args) > 3 else 1)
    if isinstance(value, float) and not value.is_integer():
        raise NotImplementedError(
            f"fusion_alias: {name} of integer tensors with value={value}: eager PyTorch casts the value to the "
            f"integer type ({int(value)}) before multiplying, Thunder 0.2.6 multiplies by {value} first and "
            "would return a different result: not supported. Pass an integer value, or floating tensors")


# Note [the dtype checks in one walk]
# -----------------------------------
# Each check above reads a few op names (or, for the in-place store, the op's ``IN_PLACE`` tag), and a
# program as traced has one symbol per op: 40k in-place ops on the bench's 100k-symbol ``chain`` trace.
# So the checks run in one walk of the program (:func:`check_dtypes`) that looks each symbol's name up
# once in a table of the checks for that name, and its symbol's in-place tag once per symbol object,
# instead of one walk per check testing every name against every set. Per op, the checks run in this
# order: the floating-result check, the store, the kernel checks, alpha, the result type.
def _op_check_table() -> dict[str, tuple]:
    table: dict[str, list] = {}
    for names, check in ((_LERP_NAMES, _check_lerp), (_ADDCDIV_NAMES | _ADDCMUL_NAMES, _check_integer_addc),
                         (_SUB_NAMES, _check_bool_sub), (_NO_BOOL_KERNEL, _check_no_bool_kernel),
                         (_NO_BOOL_KERNEL_ON_CPU, _check_no_bool_kernel_on_cpu), (_POW_NAMES, _check_bool_pow),
                         (_ALPHA_NAMES, _check_alpha), (_PROMOTING, _check_result_dtype)):
        for name in names:
            table.setdefault(name, []).append(check)
    for name, check in scalar_ranges.CHECKS.items():  # (Note [a number eager converts to the op's dtype])
        table.setdefault(name, []).append(check)
    return {name: tuple(checks) for name, checks in table.items()}


_OP_CHECKS = _op_check_table()


def check_dtypes(top_bsyms, before: dict | None = None) -> None:
    """Raise eager's error where it refuses an op's operand dtypes or an in-place op's store, in program order
    (Note [the dtype checks in one walk]). ``before``: more checks by op name, ``name -> callable(bsym)``, run
    first on the symbols they name (``refusals.check_refusals``'s checks of the program as traced)."""
    before = before or {}
    checks_of = _OP_CHECKS.get
    in_place, store_checked = prims.OpTags.IN_PLACE, {}  # id(symbol) -> whether its ops' stores are checked
    for b in top_bsyms:
        sym = b.sym
        name = sym.name
        if name in before:
            before[name](b)
        if name in _FLOAT_RESULT:
            _check_float_result(b, name)  # (before the tag: true_divide_ is one of inplace_lookasides.py's)
        if b.subsymbols:
            stored = store_checked.get(id(sym))
            if stored is None:
                stored = store_checked[id(sym)] = in_place in (sym.tags or ()) and name not in _CASTING_OPS
            if stored:
                _check_inplace_store(b, name)
        checks = checks_of(name)
        if checks is not None:
            for check in checks:
                check(b, name)
        check_int_operands(b, name)  # (scalar_ranges.py, Note [a Python int no torch scalar holds])
        check_kernel(b)  # (eager_kernels.py, Note [ops eager has no kernel for, asked of eager])
