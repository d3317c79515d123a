"""Arguments Thunder 0.2.6 replaced by another it found sharing storage, checked at every call.

Note [arguments Thunder replaced]
---------------------------------
Used directly (``thunder.jit(fn, executors=[fusion_alias.executor])``), the program fusion_alias gets
has been through Thunder's own alias pass, which replaces every tensor argument sharing a storage with
an earlier one by that earlier one (reshaped where their shapes differ): ``replace_args_with_alias_map``
in ``thunder/core/update_aliases.py``. That is right only when the two are one layout of the memory.
For two rows of one buffer it is not::

    def g(a, b):
        a.mul_(2)
        return a + b

    x = torch.arange(8.).reshape(2, 4)
    thunder.jit(g, executors=[fusion_alias.executor])(x[0], x[1])   # [0, 4, 8, 12]: a + a; eager [4, 7, 10, 13]

(session 26 hand probe; plain ``thunder.jit`` gives the same wrong values). ``b`` is gone from the
trace fusion_alias sees, so no analysis of it can help; but ``b`` is still an argument of the compiled
function, and Thunder keys its cache only by which arguments share a storage, so ``(x, x)`` and
``(x, x.t())`` run one program. So each replacement becomes a check that runs first at every call:
the replaced argument must be the one it was replaced by (the same storage, offset, sizes, strides and
dtype), or, where Thunder reshaped, that one's contiguous reshape; otherwise the call raises, naming
both arguments. ``fusion_alias.jit`` keeps Thunder's pass off and guards aliasing itself: it needs none.
"""

from __future__ import annotations

import torch
import thunder
from thunder.core.compile_data import _compile_data
from thunder.core.prims import OpTags
from thunder.core.proxies import TensorProxy
from thunder.core.pytree import tree_flatten
from thunder.core.symbol import Symbol
from thunder.core.update_aliases import _is_inplace_op

from fusion_alias.errors import AliasInputError


def replaced_pairs(trace) -> list[tuple[TensorProxy, TensorProxy]]:
    """``(kept, replaced)`` per tensor argument of ``trace`` that Thunder's alias pass replaced by another (Note
    [arguments Thunder replaced]), as Thunder pairs them: by its alias indices, over the trace's flattened
    arguments. Empty outside a ``thunder.jit`` compilation, where no arguments share a storage, and where
    Thunder replaced none: its pass skipped (``skip_inplace_alias_updates``) or the program writes nothing
    (Thunder's ``insert_alias_updates`` then returns at once)."""
    try:
        indices = thunder._get_cache_info().get("alias_tensor_indices")
        cd, cs = _compile_data.get()
    except LookupError:
        return []
    if not indices or cd.compile_options.get("skip_inplace_alias_updates", False):
        return []
    traced = cs.last_traces[0] if cs.last_traces else trace  # (Thunder replaces only in a program that writes)
    if not any(_is_inplace_op(b) for b in traced.bound_symbols):
        return []
    flat, _ = tree_flatten((trace.args, trace.kwargs))
    pairs = []
    for group in indices.split("-"):
        positions = [int(i) for i in group.split(",") if i != ""]
        if not positions or positions[0] >= len(flat):
            continue
        kept = flat[positions[0]]
        for i in positions[1:]:
            if i < len(flat) and isinstance(kept, TensorProxy) and isinstance(flat[i], TensorProxy):
                pairs.append((kept, flat[i]))
    return pairs


def _one_layout(kept: torch.Tensor, replaced: torch.Tensor) -> bool:
    """Whether ``replaced`` is ``kept`` (or, where the shapes differ, ``kept``'s contiguous reshape)."""
    if not (kept.untyped_storage().data_ptr() == replaced.untyped_storage().data_ptr() and kept.dtype == replaced.dtype
            and kept.storage_offset() == replaced.storage_offset()):
        return False
    if kept.shape == replaced.shape:
        return kept.stride() == replaced.stride()
    return kept.is_contiguous() and replaced.is_contiguous()


def _check_replaced(kept, replaced, kept_name: str, replaced_name: str) -> None:
    if isinstance(kept, torch.Tensor) and isinstance(replaced, torch.Tensor) and not _one_layout(kept, replaced):
        raise AliasInputError(
            f"fusion_alias: Thunder 0.2.6 replaced the argument {replaced_name} by {kept_name} because they share a "
            f"storage, which gives eager's result only when {replaced_name} is {kept_name} itself (the same offset, "
            f"sizes and strides); here it is another view of that memory, and plain thunder.jit would compute with "
            f"{kept_name} in its place. Use fusion_alias.jit, which keys its programs by how the arguments overlap, "
            "or pass clones")


def _check_meta(kept, replaced, kept_name: str, replaced_name: str) -> None:
    return None


_CHECKS: dict = {}  # executor -> its check symbol (a symbol with an executor is kept as it is after the pass)


def _check_symbol(executor) -> Symbol:
    sym = _CHECKS.get(executor)
    if sym is None:
        name = "fusion_alias_check_replaced_argument"
        sym = _CHECKS[executor] = Symbol(
            name=name, id="fusion_alias.check_replaced_argument", meta=_check_meta, is_prim=True,
            tags=(OpTags.DONT_DCE,), executor=executor,
            _bind_postprocess=lambda b: setattr(b, "_call_ctx", {name: _check_replaced}))
    return sym


def runtime_checks(trace, executor) -> list:
    """The bound checks of Note [arguments Thunder replaced] for ``trace``, to run first (by ``executor``)."""
    pairs = replaced_pairs(trace)
    if not pairs:
        return []
    sym = _check_symbol(executor)
    return [sym.bind(kept, replaced, kept.name, replaced.name, output=None) for kept, replaced in pairs]
