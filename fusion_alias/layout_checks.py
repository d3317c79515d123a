"""Eager's errors, and fusion_alias's refusals, for ops whose result depends on a tensor's memory layout:
``view`` of a layout that cannot be viewed, ``view(dtype)`` (eager's rule on the last stride and the element
sizes), and ``as_strided`` (it addresses the storage). ``layouts.copying_reshapes`` asks them, with eager's
modelled layouts (``layouts._Layouts``) of the program's results.
"""

from __future__ import annotations

import torch
from thunder.core import dtypes
from thunder.core.dtypes import to_torch_dtype
from thunder.core.proxies import TensorProxy

from fusion_alias import ops
from fusion_alias.aliasing import output_may_alias
from fusion_alias.errors import AliasInputError

#: torch functions (Thunder symbol names) that must return a view, and raise where they cannot
_MUST_VIEW = frozenset({"view", "view_as"})

class ViewLayoutError(AliasInputError):
    """A program eager rejects (``view`` of a layout that is not viewable), or whose view-vs-copy
    decision fusion_alias cannot make safely."""


def _meta_like(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")


def _meta_contiguous(p: TensorProxy, memory_format=torch.contiguous_format) -> torch.Tensor | None:
    try:
        return torch.empty(tuple(p.shape), dtype=to_torch_dtype(p.dtype), device="meta", memory_format=memory_format)
    except Exception:
        return None


# Note [a reshape that only adds or drops size-1 dims is a view in every layout]
# ------------------------------------------------------------------------------
# Eager's ``reshape``/``view`` of ``x`` is a view whenever its strides allow; where ``x`` has at most one
# element, or the new shape keeps ``x``'s sizes other than 1 in order (``x.view(1)`` of a 0-dim ``x``,
# ``x[None]``-like ``x.reshape(1, 3, 1)`` of a (3,) ``x``), they always allow, whatever the layout. So the
# view-or-copy decision needs no layout there::
#
#     t1 = b.conj().view(1)     # b a 0-dim float64 argument: conj of a real tensor is opaque, its layout unknown
#
# was refused ("cannot tell whether reshape ... is a view or a copy") in a program that writes in place
# (fuzz seed 20786 #10, dtype), where eager's answer, a view, does not depend on the layout.
def _a_view_in_every_layout(in_shape, shape) -> bool:
    """``reshape`` of a tensor of ``in_shape`` to ``shape`` is a view whatever its strides (Note above).

    >>> _a_view_in_every_layout((), (1, 1)), _a_view_in_every_layout((3,), (1, 3)), _a_view_in_every_layout((2, 3), (6,))
    (True, True, False)
    """
    try:
        in_shape, shape = tuple(int(s) for s in in_shape), tuple(int(s) for s in shape)
    except (TypeError, ValueError):  # (a symbolic size: not told)
        return False
    numel = 1
    for s in in_shape:
        numel *= s
    return numel <= 1 or [s for s in in_shape if s != 1] == [s for s in shape if s != 1]


def _viewable(t: torch.Tensor, shape) -> bool:
    try:
        t.view(tuple(shape))
        return True
    except RuntimeError:
        return False



# Note [as_strided of a layout fusion regions do not keep]
# --------------------------------------------------------
# ``x.as_strided(size, stride)`` addresses ``x``'s storage, so its result depends on ``x``'s layout, not
# only on its values. Fusion regions return contiguous tensors; eager an elementwise result in its
# input's layout, a clone in its source's::
#
#     c = a.t() * 2                       # eager: strides (1, 4)
#     return c.as_strided((2,), (1,))     # eager: c[0, 0], c[1, 0]; a region's contiguous c: c[0, 0], c[0, 1]
#
# (session 14 hand probe, a silently wrong value, found while fixing fuzz seed 20119 #79). An
# ``as_strided`` of a tensor whose run-time layout is not eager's (or unknown) is refused; of an input or
# a chain of views of one (``as_strided`` of ``as_strided`` too: real views at run time), or of a result
# whose layout is contiguous in eager too, it runs.


def _same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.storage_offset() == b.storage_offset() and tuple(a.shape) == tuple(b.shape)
            and all(st_a == st_b for n, st_a, st_b in zip(a.shape, a.stride(), b.stride()) if n != 1))


def _is_storage_op(b) -> bool:
    """Whether ``b`` is ``as_strided`` or ``view(dtype)`` of a tensor (an op whose result depends on the layout), or
    ``prims.bitcast``, the ``view(dtype)`` of the joint trace of a call that computes gradients (Thunder's autodiff
    flattens it: ``(t.t() * 2).view(torch.float16)`` returned a value where eager raises, order --grad 27014 #10)."""
    return bool(b.args) and isinstance(b.args[0], TensorProxy) and (
        b.sym.name == "as_strided" or (b.sym.name == "view" and len(b.args) == 2 and isinstance(b.args[1], torch.dtype))
        or (b.sym.name == "bitcast" and len(b.args) == 2 and isinstance(b.args[1], (torch.dtype, dtypes.dtype))))


def _storage_ops(flat: list) -> list[int]:
    """Positions in ``flat`` of the ops ``_is_storage_op`` names."""
    return [i for i, b in enumerate(flat) if _is_storage_op(b)]


def _check_dtype_view_of_a_result(b, actual: dict, eager) -> None:
    """Eager's error for ``x.view(dtype)`` of an element size other than ``x``'s, where ``x`` is a result
    whose eager layout has a last stride other than 1: ``(a.t() * 2).view(torch.float16)`` raises in eager
    ("self.stride(-1) must be 1 to view Float as Half"), and ran on the contiguous tensor a region returns
    (session 14 hand probe, a missed rejection). Views of inputs run on the real tensor: torch raises there."""
    x = b.args[0]
    if _view_of_an_input(x, eager.producer, actual):
        return
    target = to_torch_dtype(b.args[1])  # (a Thunder dtype: ``prims.bitcast``'s, _is_storage_op)
    if isinstance(target, torch.dtype) and to_torch_dtype(x.dtype).itemsize == target.itemsize:
        return  # the same element size: a view of any layout, in eager too (fuzz seed 20206 #87, edges)
    layout = eager.of(x)
    if layout is None or not _layout_known(x, eager, actual):
        raise ViewLayoutError(
            f"fusion_alias: cannot tell whether view of {x.name} as {b.args[1]} is one eager PyTorch accepts (its "
            "memory layout comes from an op fusion_alias cannot see through): not supported. Workaround: "
            ".contiguous() before the view")
    _check_dtype_view(x.name, layout, target)


def _view_of_an_input(x: TensorProxy, producer: dict, actual: dict) -> bool:
    """Whether ``x`` is an input or a chain of views (opaque ones too) of one: a real view at run time."""
    while x.name not in actual:
        b = producer.get(x.name)
        if b is None or not (ops.is_view(b) or (ops.op_info(b) is None and output_may_alias(b, x.name))):
            return False
        x = next((a for a in b.flat_args if isinstance(a, TensorProxy)), None)
        if x is None:
            return False
    return True


def _layout_known(x: TensorProxy, eager, actual: dict) -> bool:
    """Whether eager's layout of ``x`` is known, not guessed (``_Layouts.guessed``: an elementwise result of
    ``a.swapaxes(0, 1)`` is taken as contiguous, eager's is transposed; fuzz seeds 20132 #12, #42, order)."""
    return x.name in actual or (eager.of(x) is not None and x.name not in eager.guessed)


def _check_as_strided(x: TensorProxy, actual: dict, eager, runtime) -> None:
    if _view_of_an_input(x, eager.producer, actual):
        return
    at_eager, at_run = eager.of(x), runtime.of(x)
    if not _layout_known(x, eager, actual):
        at_eager = None
    if at_eager is None or at_run is None or not _same_layout(at_eager, at_run):
        what = "unknown" if at_eager is None else f"strides {tuple(at_eager.stride())}, offset {at_eager.storage_offset()}"
        raise ViewLayoutError(
            f"fusion_alias: as_strided of {x.name} addresses its storage, laid out by eager PyTorch as {what}, "
            "a layout fusion regions do not keep (they return contiguous tensors): not supported. "
            "Workaround: .contiguous() before as_strided"
        )


def _check_dtype_view(name: str, meta, dtype) -> None:
    """Eager's error for ``view(dtype)`` of an input of ``meta``'s layout, if it raises one: a float32 ``(4,)``
    viewed as int16 is ``(8,)``, not a shape view of 8 elements (hostile probe 14: it was refused, saying eager
    rejects it)."""
    try:
        meta.view(dtype)
    except RuntimeError as e:
        raise ViewLayoutError(f"fusion_alias: {e} (view of {name} as {dtype}; eager PyTorch rejects this too)") from None


def _check_views_of_inputs(top: list, actual: dict) -> None:
    """Raise eager's error for ``view()`` of an input whose layout cannot be viewed, used or not.

    Note [a dead view still raises]: ``t = b.view(-1); return ()`` with ``b`` a transposed
    input raises in eager. Thunder's DCE drops the unused view before the fusion pass sees it,
    so it is checked on the program as traced (``top``), for views of the call's inputs.
    """
    for b in top:
        if b.sym.name not in _MUST_VIEW or not b.args or not isinstance(b.args[0], TensorProxy):
            continue
        x, out = b.args[0], b.output
        t = actual.get(x.name)
        if t is None or not isinstance(out, TensorProxy):
            continue
        if out.dtype != x.dtype:  # x.view(torch.int16): eager's rule is on element sizes, asked of torch itself
            _check_dtype_view(x.name, _meta_like(t), to_torch_dtype(out.dtype))
            continue
        shape = tuple(out.shape)
        if not _viewable(_meta_like(t), shape):
            raise ViewLayoutError(
                f"fusion_alias: view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces): view of {x.name} (strides "
                f"{tuple(t.stride())}) as {shape}. Use .reshape(...) instead (eager PyTorch rejects this too)"
            )
