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

import torch
import thunder.core.prims as prims
from thunder.core import dtypes as thunder_dtypes
from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import TensorProxy

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


def _torch_dtype(p):
    try:
        return to_torch_dtype(p.dtype)
    except Exception:  # a dtype torch does not know: nothing to say
        return None


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


def _is_inplace(bsym) -> bool:
    return prims.OpTags.IN_PLACE in (bsym.sym.tags or ())


def check_inplace_dtypes(top_bsyms) -> None:
    """Raise :class:`InplaceDtypeError` where eager refuses an in-place op's store (module Note)."""
    convert = prims.PrimIDs.CONVERT_ELEMENT_TYPE
    copy_id = prims.PrimIDs.COPY_
    in_place = prims.OpTags.IN_PLACE
    for b in top_bsyms:
        if not b.subsymbols or in_place not in (b.sym.tags or ()):  # (_is_inplace)
            continue
        name = b.sym.name
        if name in _CASTING_OPS:
            continue
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
            if want is torch.bool and len(b.args) > 1 and all(
                    isinstance(a, TensorProxy) and _torch_dtype(a) is torch.bool for a in b.args):
                continue  # bool operands: eager computes in bool (``b.add_(c, alpha=2)``); Thunder's int8 casts back alike
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
_LERP_NAMES = frozenset({"lerp", "lerp_"})
_ADDCDIV_NAMES = frozenset({"addcdiv", "addcdiv_"})
_ADDCMUL_NAMES = frozenset({"addcmul", "addcmul_"})
_SUB_NAMES = frozenset({"sub", "sub_", "rsub", "__sub__", "__rsub__", "__isub__"})
_TORCH_TYPE_NAMES = {torch.int8: "Char", torch.uint8: "Byte", torch.int16: "Short", torch.int32: "Int",
                     torch.int64: "Long", torch.bool: "Bool"}


def check_op_dtypes(top_bsyms) -> None:
    """Raise eager's error where it has no kernel for an op's operand dtypes (Note [ops eager has no kernel for])."""
    for b in top_bsyms:
        name = b.sym.name
        if name in _LERP_NAMES:
            start = b.args[0] if b.args else None
            dtype = _torch_dtype(start) if isinstance(start, TensorProxy) else None
            if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
                raise NotImplementedError(
                    f'fusion_alias: {name}: "lerp_kernel_scalar" not implemented for '
                    f"'{_TORCH_TYPE_NAMES.get(dtype, dtype)}' (eager PyTorch rejects this too)")
        elif name in _ADDCDIV_NAMES or name in _ADDCMUL_NAMES:
            _check_integer_addc(b, name)
        elif name in _SUB_NAMES and any(
                isinstance(a, TensorProxy) and thunder_dtypes.is_boolean_dtype(a.dtype) for a in b.args[:2]):
            raise RuntimeError(
                f"fusion_alias: {name}: Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                "are trying to invert a mask, use the `~` or `logical_not()` operator instead (eager PyTorch "
                "rejects this too)")
        if name in _PROMOTING:
            _check_result_dtype(b, name)


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
            f"PyTorch's result is {want}, Thunder 0.2.6's trace says {got} (it promotes a tensor made from a 0-d "
            "tensor by shape ops as if it were still 0-d), and a fusion would return that: not supported. "
            "Workaround: convert the operands to one dtype with .to(...) first"
        )



def _check_integer_addc(b, name: str) -> None:
    tensors = [a for a in b.args[:3] if isinstance(a, TensorProxy)]
    if not tensors or not all(thunder_dtypes.is_exact_dtype(t.dtype) for t in tensors):
        return  # (a floating operand: eager's ordinary rules)
    if name in _ADDCDIV_NAMES:
        raise RuntimeError(
            f"fusion_alias: {name}: Integer division with addcdiv is no longer supported (eager PyTorch rejects "
            "this too); use torch.floor_divide or true division on floating tensors")
    value = b.kwargs.get("value", b.args[3] if len(b.args) > 3 else 1)
    if isinstance(value, float) and not value.is_integer():
        raise NotImplementedError(
            f"fusion_alias: {name} of integer tensors with value={value}: eager PyTorch casts the value to the "
            f"integer type ({int(value)}) before multiplying, Thunder 0.2.6 multiplies by {value} first and "
            "would return a different result: not supported. Pass an integer value, or floating tensors")
