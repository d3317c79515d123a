"""Refusal of an in-place op whose operand overlaps the tensor it writes, as eager refuses it.

Note [why operand overlaps are refused]
---------------------------------------
Eager checks an in-place op's operands against the tensor it writes (which
operands, and how: Note [which operands eager checks] in ``inplace_ops.py``)::

    x = torch.arange(4.).view(2, 2)
    x.add_(x.t())      # eager: RuntimeError "unsupported operation: some elements of the
                       # input tensor and the written-to tensor refer to a single memory location"

A fused region is functional inside: it computes ``x + x.t()`` as a fresh value
and writes it back, so without this check ``fusion_alias.jit`` returns
``x = [[0, 3], [3, 6]]`` under both reference schedules (checked), a result for
a program eager calls ill-defined (an in-place kernel's answer would depend on
the order it visits the elements). So it raises ``AliasInputError`` with
eager's words instead. Overlap is decided on addresses: each tensor's view
chain replayed (``views.replay_view``) on the real input, or on a meta tensor
of its root's shape for a tensor the program made, then compared as torch's
``get_overlap_status`` would (``_overlap_status``). With gradients, the ops
reach us decomposed, so the check runs on the trace as traced
(Note [operands as the user wrote them]).
"""

from __future__ import annotations

import torch
import thunder
from thunder.core.proxies import TensorProxy
import thunder.core.prims as prims

from fusion_alias.aliasing import AliasInfo, analyze, proxy_outs
from fusion_alias.errors import AliasInputError
from fusion_alias.input_groups import _input_groups
from fusion_alias.layouts import copying_reshapes
from fusion_alias.leaf_views import is_detach
from fusion_alias.overlap import _view_bits, may_overlap
from fusion_alias.refusals.inplace_ops import (
    _InplaceOp,
    _inplace_ops_by_write,
    _leaf_symbols,
    _traced_program,
)
from fusion_alias.view_rewrites import as_view_prim
from fusion_alias.views import replay_view


def _check_original_operands(ctx, actual: dict) -> None:
    """Check operand overlaps on the trace as traced, before autodiff decomposed its in-place ops.

    Note [operands as the user wrote them]: Thunder's grad transform hands us
    ``add_(a, b, alpha=2)`` as ``mul(b, 2); add(a, _); copy_(_, a)``, which looks
    exactly like ``a.copy_(a + b * 2)``: eager rejects the first for ``b = a[0]``
    and accepts the second. Only the traced program still tells them apart.
    """
    original = _traced_program()
    if original is None:
        return
    flat = [_detach_as_identity_view(p) for b in original.bound_symbols for p in _leaf_symbols(b)]
    tensor_inputs = [a for a in original.args if isinstance(a, TensorProxy)]
    groups, actual = _input_groups(original, ctx, tensor_inputs)
    # a reshape that copies in eager is a copy here too, as in the pass (layouts.py): replayed on the real
    # input it made a new tensor per name, so ``t = a.mT.expand(2, 4, 6, 1).reshape(8, 6, 1);
    # t.div_(t[0:1])`` compared two copies and missed eager's partial overlap (fuzz seed 11 #39)
    flat = copying_reshapes(original, flat, actual, original, contiguous=False)
    info = analyze(flat, tensor_inputs, groups)
    proxies = {o.name: o for b in flat for o in proxy_outs(b) if isinstance(o, TensorProxy)}
    proxies.update((p.name, p) for p in tensor_inputs)
    metas: dict = {}
    # the trace's input names: an overlap met only through an opaque op (``torch.narrow``) is refused here too
    # (Note [operands related through an opaque op]); without them ``a.expand(2, 4, 4).narrow(0, 1, 1)[0].hypot_(b)``
    # with ``b = a.t()``, which eager rejects, ran (fuzz seed 20617 #22, calls: an op fusion_alias adds to Thunder's
    # tracing is checked only here)
    inputs = frozenset(p.name for p in tensor_inputs)
    for op in _inplace_ops_by_write(original.bound_symbols, {}).values():
        _check_operand_overlap(op, info, actual, proxies, metas, inputs)


def _detach_as_identity_view(b):
    """``b``, or for ``y = detach(x)`` the identity view ``y = shallow_copy(x)`` (the operand check's own analysis only).

    Note [detach in the operand check]
    ----------------------------------
    ``x.detach()`` is ``x``'s memory with ``x``'s sizes and strides: the same elements. The alias
    analysis keeps it a root of its own in ``x``'s memory group (an op it does not replay), and a
    root the program made without a tensor behind it says nothing to the operand check, so an
    overlap eager rejects ran (fuzz seeds 20003 #1, 20009 #6, 20022 #0)::

        kv[1:3] = kv[0:2].detach()                              # eager: "... a single memory location"
        kv.index_copy_(0, torch.tensor([0]), kv[0].detach()[None])

    For the operand check, which compares addresses and nothing of autograd, ``detach`` is the
    identity view it is: ``kv[0:2].detach()`` is replayed as ``kv[0:2]`` and compared on the real
    tensor, and ``x.add_(x.detach())`` is the full overlap eager accepts. (The pass's own analysis
    reads ``detach`` so too in a call that computes no gradient: aliasing.py, Note [detach is the
    same view]; with gradients it stays an op it cannot relate to its input, Note [operands related
    through an opaque op].)
    """
    if is_detach(b):
        return prims.shallow_copy.bind(b.args[0], output=b.output)
    # ``x.narrow(d, s, n)``, ``x.swapaxes(i, j)``: the slice and transpose they are, as the pass reads them (Note [narrow
    # is a slice], view_rewrites.py); left opaque here, ``a.narrow(0, 1, 1).copy_(b)`` of ``b = a[2, 1]`` met ``b`` only
    # through an op it could not relate to ``a`` and was refused, where eager runs it (fuzz seed 20799 #40, basic)
    return as_view_prim(b) or b


def _non_overlapping_and_dense(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements fill one block of memory exactly, in some order of its dims.

    Dims of size 1 do not count; the others, sorted by stride, must have strides
    1, n0, n0*n1, ...: ``x.t()`` is, ``x[:, ::2]`` and ``x.expand(2, 3)`` are not.
    (torch's private ``_prims_common.is_non_overlapping_and_dense``, gone in torch 2.11.)
    """
    expected = 1
    for stride, size in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _overlap_status(a: torch.Tensor, b: torch.Tensor) -> str:
    """PyTorch's ``get_overlap_status`` for two views: "full" (same bytes, same strides),
    "partial", "none", or "too hard" (either is not non-overlapping and dense)."""
    if a.numel() == 0 or b.numel() == 0:
        return "none"
    if not (_non_overlapping_and_dense(a) and _non_overlapping_and_dense(b)):
        return "too hard"
    (a0, a1), (b0, b1) = _byte_span(a), _byte_span(b)
    if (a0, a1) == (b0, b1):
        return "full" if a.stride() == b.stride() else "partial"
    return "partial" if a0 < b1 and b0 < a1 else "none"


def _setitem_value(value: torch.Tensor, written: torch.Tensor):
    """The tensor eager's ``a[key] = value`` copies from, or None when it fills.

    Note: a value of the written slice's shape is copied as it is; a 0-dim value
    is a ``fill_`` (on CPU); any other value loses its leading 1-sized dims (all but
    the last, as eager's ``slicePrefix1sSize``) and is expanded to the slice. ``x[0] = x[0:1]`` copies ``x[0]`` (checked);
    ``x[0:2] = x[0]`` copies ``x[0].expand(2, 4)`` (too hard: not checked);
    ``x[0:2] = x[0, 0]`` fills.
    """
    if tuple(value.shape) == tuple(written.shape):
        return value
    if value.dim() == 0:
        return None
    while value.dim() > 1 and value.shape[0] == 1:
        value = value.squeeze(0)
    try:
        return value.expand(written.shape)
    except RuntimeError:
        return None


def _check_operand_overlap(
    op: _InplaceOp, info: AliasInfo, actual: dict, proxies: dict, metas: dict, inputs: frozenset | None = None
) -> None:
    """Reject an in-place op whose operand overlaps what it writes, as eager does
    (see Note [which operands eager checks]): ``x.add_(x.t())``, ``x.add_(x[0], alpha=2)``,
    ``x[0:3].copy_(x[1:4])``, ``x.index_add_(0, i, x)``.

    Addresses are compared on the real inputs (or on meta stand-ins of a tensor the
    program made), through each tensor's view chain. ``inputs`` (the trace's input names) lets
    an overlap met only through an opaque op be refused (Note [operands related through an opaque op]).
    """
    dst = op.written
    written = None
    for x, rule in op.operands:
        if _says_nothing(x.name, dst.name, info, actual, inputs):
            continue
        roots = (info.root[x.name], info.root[dst.name])
        if roots[0] != roots[1] and (roots[0] not in actual or roots[1] not in actual):
            # Note [operands related through an opaque op]: a root the program made meets another root
            # in one memory group only through an op whose result may alias its input and that
            # fusion_alias cannot replay (the torch executor's ``torch.narrow``): with ``b = a.t()``,
            # ``a.narrow(1, 0, 4).add_(b)`` is a partial overlap eager rejects, which a region would run.
            # Whether eager raises cannot be told here, so the call is refused (fuzz seed 13009 #39).
            raise AliasInputError(
                f"fusion_alias: {op.name}: the input tensor {x.name} and the written-to tensor {dst.name} may "
                "share memory through an op whose result fusion_alias cannot relate to its input, so it cannot "
                "tell whether eager PyTorch would reject the overlap: not supported. clone() the input first"
            )
        if written is None:
            # (a setitem with a list or tensor index writes, for eager's check, the key's basic part: Note [a
            # list key is an index_put_], inplace_ops.py)
            written = _written_view(op._replace(key=op.index_self) if rule == "index" else op, info, actual, proxies,
                                    metas)
            if written is None:
                return
        x_view = _actual_view(x.name, info, actual, proxies, metas)
        if x_view is None:
            continue
        if rule == "at_a_number":  # Note [a 0-d integer key is a number] (inplace_ops.py)
            if _shares_elements(x_view, written):
                raise AliasInputError(
                    f"fusion_alias: {op.name}: the value {x.name} shares memory with {dst.name}, which is indexed by a "
                    "0-dim integer tensor: whether the two overlap, and so whether eager PyTorch rejects the write, "
                    "depends on the tensor's value: not supported. Index with a Python int, or clone the value")
            continue
        if rule == "index":  # Note [a list key is an index_put_] (inplace_ops.py): eager's assert_no_overlap
            status = _overlap_status(x_view, written)
            if status == "too hard" and _index_shares_elements(op, x_view, written):
                raise AliasInputError(
                    f"fusion_alias: {op.name}: the input tensor {x.name} and the written-to tensor {dst.name} share "
                    "memory in a layout eager PyTorch does not check (not dense), so eager's result depends on the "
                    "order in which it visits memory: not supported. clone() the input first")
            rule, status = "any", "none" if status == "too hard" else status
        else:
            if rule == "setitem":
                x_view, rule = _setitem_value(x_view, written), "partial"
                if x_view is None:
                    continue
            status = "full" if op.key is None and info.same_view(x.name, dst.name) else _overlap_status(x_view, written)
        if rule == "ordered" and status != "none" and (status != "too hard" or _shares_elements(x_view, written)):
            raise AliasInputError(  # Note [masked_scatter_ reads its source as it writes]
                f"fusion_alias: {op.name}: the input tensor {x.name} and the written-to tensor {dst.name} share "
                "memory, which eager PyTorch does not check: it reads the source in the mask's order while it "
                "writes, so its result depends on that order: not supported. clone() the input first"
            )
        eager_rejects = status == "partial" or (status == "full" and rule == "any")
        if roots[1] not in actual and (eager_rejects or (status == "too hard" and not _order_independent(
                x_view, written, op.name in _COPIES))):
            # Note [a layout the program made]: the stand-in's layout is a guess, and eager's verdict depends on it
            raise AliasInputError(
                f"fusion_alias: {op.name}: some elements of the input tensor {x.name} and the written-to tensor "
                f"{dst.name} refer to a single memory location, both views of {roots[1]}, a tensor the program made "
                "(or a view fusion_alias cannot replay): eager PyTorch rejects that where both are dense in the "
                "layout it gives that tensor, and otherwise runs the op in memory order, so the result would depend "
                "on a layout fusion_alias does not know: not supported. clone() the input first"
            )
        if eager_rejects and _view_bits(actual.get(roots[0])) != _view_bits(actual.get(roots[1])):
            # ``a.add_(a.conj()[0])``: eager reads a conjugate (negative) view whole before some ops and checks the
            # overlap in others (``copy_``); which, it does not say (session 17 hand probe: the claim below was false)
            raise AliasInputError(
                f"fusion_alias: {op.name}: the input tensor {x.name} shares memory with the written-to tensor "
                f"{dst.name} through a conjugate or negative view (x.conj()), which eager PyTorch reads whole first "
                "for some ops and rejects as an overlap for others: not supported. clone() or .resolve_conj() the "
                "input first"
            )
        if eager_rejects:
            raise AliasInputError(
                f"fusion_alias: {op.name}: unsupported operation: some elements of the input tensor {x.name} and "
                f"the written-to tensor {dst.name} refer to a single memory location (eager PyTorch rejects "
                "this too); clone() the input first"
            )
        if status == "too hard" and not _order_independent(x_view, written, op.name in _COPIES):
            raise AliasInputError(
                f"fusion_alias: {op.name}: the input tensor {x.name} and the written-to tensor {dst.name} share "
                "memory in a layout eager PyTorch does not check (not dense), so eager's result depends on the "
                "order in which it visits memory: not supported. clone() the input first"
            )


# Note [operand checks the analysis decides]
# ------------------------------------------
# ``_check_operand_overlap`` first asks, per operand, what the alias analysis alone
# answers: an operand outside the written tensor's memory group, or two different
# roots that are both inputs (the caller only says they may overlap) with no tensors
# to compare, says nothing. Where that holds for every operand the check returns
# without a tensor, so ``_check_writes`` keeps such ops out of what it looks for in
# program order: ``p.add_(g, alpha=-lr)`` over 20k parameters in one input group (the
# aliased wide bench) is decided here, and the flattened trace is not searched for
# their writes (``_check_writes`` 0.43 -> 0.18 s there, best of 5).


def _says_nothing(x_name: str, dst_name: str, info: AliasInfo, actual: dict, inputs: frozenset | None) -> bool:
    """Whether the alias analysis alone answers for operand ``x_name`` of a write of ``dst_name``:
    outside its memory group, or two different roots that are both inputs with no tensors to
    compare (the caller only says they may overlap): nothing to say (Note [operand checks the
    analysis decides])."""
    root = info.root
    if dst_name not in root or x_name not in root or info.group(x_name) != info.group(dst_name):
        return True
    roots = (root[x_name], root[dst_name])
    return (roots[0] != roots[1] and (roots[0] not in actual or roots[1] not in actual)
            and (inputs is None or all(r in actual or r in inputs for r in roots)))


def _compares_operands(op: _InplaceOp, info: AliasInfo, actual: dict, inputs: frozenset | None) -> bool:
    """Whether ``_check_operand_overlap(op, info, actual, ..., inputs)`` goes past the analysis's
    answer for some operand, to compare tensors or to refuse (Note [operand checks the analysis
    decides]); False: the check says nothing."""
    dst = op.written.name
    return any(not _says_nothing(x.name, dst, info, actual, inputs) for x, _ in op.operands)


def _index_shares_elements(op: _InplaceOp, x: torch.Tensor, written: torch.Tensor) -> bool:
    """Whether ``x`` has an element in common with those ``op`` (a setitem with a list or tensor index) writes
    of ``written`` (its ``index_self`` view). Where the key is lists of ints, the elements written are those
    the lists pick (``a[:, [0]] = a[:, 3:4]`` writes column 0 only, and runs in eager in any order); with a
    tensor index, all of ``written`` (unsure)."""
    if op.key is None or x.numel() == 0 or max(x.numel(), written.numel()) > _MAX_CHECKED:
        return _shares_elements(x, written)
    real = x.device.type != "meta" and written.device.type != "meta"
    if real and x.untyped_storage().data_ptr() != written.untyped_storage().data_ptr():
        return _shares_elements(x, written)
    parts = op.key if isinstance(op.key, tuple) else (op.key,)
    # the key over ``written``'s dimensions: an int's is gone, a slice's and None's are taken whole
    key = tuple(k if isinstance(k, list) or k is Ellipsis else slice(None)
                for k in parts if not (isinstance(k, int) and not isinstance(k, bool)))
    try:
        picked = _storage_offsets(written).reshape(written.shape)[key].reshape(-1)
    except Exception:  # a key torch cannot apply here: all of it
        return _shares_elements(x, written)
    return bool(torch.isin(_storage_offsets(x), picked).any())


def _written_view(op: _InplaceOp, info: AliasInfo, actual: dict, proxies: dict, metas: dict):
    view = _actual_view(op.written.name, info, actual, proxies, metas)
    if view is None or op.key is None:
        return view
    try:
        return view[op.key]
    except Exception:  # a key torch cannot apply to the stand-in: nothing to say
        return None


def _actual_view(name: str, info: AliasInfo, actual: dict, proxies: dict, metas: dict):
    """The tensor ``name`` is at run time (a view of a real input, or of a meta stand-in
    for a tensor the program made), or None when its view chain cannot be replayed."""
    root = info.root.get(name)
    base = actual.get(root)
    if base is None:
        p = proxies.get(root)
        if not isinstance(p, TensorProxy):
            return None
        if root not in metas:
            metas[root] = torch.empty(tuple(p.shape), device="meta", dtype=thunder.core.dtypes.to_torch_dtype(p.dtype))
        base = metas[root]
    try:
        return replay_view(base, info.chain.get(name, ()))
    except Exception:
        return None


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    begin = t.data_ptr() if t.device.type != "meta" else t.storage_offset() * t.element_size()
    return begin, begin + t.numel() * t.element_size()


# Note [masked_scatter_ reads its source as it writes]
# ----------------------------------------------------
# ``x.masked_scatter_(mask, source)`` writes ``source``'s k-th element into the k-th position of
# ``mask``, and eager checks no overlap: on a CPU it reads ``source[k]`` after the writes of the
# earlier positions. With the same tensor as source, even the full overlap every other op reads
# at the written index depends on that order (the k-th position is k or later)::
#
#     x = torch.arange(6.)
#     x.masked_scatter_(torch.arange(6) > 0, x)   # eager: [0, 0, 0, 0, 0, 0] (x[1] = x[0], then
#                                                 # x[2] = x[1], the new one, ...)
#
# A region reads ``source`` at entry and returned [0, 0, 1, 2, 3, 4] (session 14 hand probe; a
# silently wrong value). So any overlap of its operands with the written tensor is refused
# (``_shares_elements`` decides the layouts eager calls "too hard").


def _shares_elements(x: torch.Tensor, written: torch.Tensor) -> bool:
    """Whether ``x`` and ``written`` have an element in common (unsure: True)."""
    if x.numel() == 0 or written.numel() == 0:
        return False
    real = x.device.type != "meta" and written.device.type != "meta"
    if real and x.untyped_storage().data_ptr() != written.untyped_storage().data_ptr():
        return may_overlap(x, written)
    if max(x.numel(), written.numel()) > _MAX_CHECKED:
        return True
    return bool(torch.isin(_storage_offsets(x), _storage_offsets(written)).any())


# Note [a layout the program made]
# --------------------------------
# A root with no real tensor behind it (a tensor the program made, or the result of a view op the
# analysis cannot replay, such as ``swapaxes``) is compared on a contiguous meta stand-in of its
# shape. Which elements two views of it share does not depend on that layout; whether eager calls
# the overlap "partial" (and raises) or "too hard" (and runs the op in memory order) does, and eager's
# layout need not be contiguous: ``a.t() * 2``, ``a.t().clone()`` and ``a.swapaxes(0, 1)`` keep
# ``a.t()``'s strides. With ``c = a.t() * 2``, ``c.mul_(c[0:1])`` runs in eager (``c[0:1]`` is not
# dense there, Note [overlaps eager does not check]) and multiplies rows 1-3 by the *squared* row 0,
# while the stand-in's ``c[0:1]`` is dense and the check said "eager PyTorch rejects this too", a false
# claim (hand probe of session 14; the fuzzer's programs wrote only into inputs' views or contiguous
# fresh tensors here). A region cannot follow eager's memory order either, so such an overlap is
# refused in words that claim nothing about eager. Full overlap (``c.mul_(c)``) and disjoint views
# (``c[0].add_(c[1])``) are the same in every layout and still run.

# Note [overlaps eager does not check]
# ------------------------------------
# Eager checks an operand against the tensor it writes only when both are
# non-overlapping and dense; otherwise its overlap status is "too hard" and it
# runs the op in memory order, each write visible to later reads. With ``b`` a
# transposed 4x4 tensor, ``b.mul_(b[0:1])`` multiplies rows 1-3 by the *squared*
# row 0 (column by column, row 0 comes first in memory), while the same call on
# a contiguous ``b`` is rejected as a partial overlap. A fusion reads every input
# at region entry, so it would multiply by the old row 0 (fuzz seed 1 #845).
# Such a call is refused unless its result cannot depend on the order:
# * a copy (``copy_``, setitem) where every element that is both written and
#   read is written from itself: ``a.copy_(a[0].expand(4, 4))`` leaves row 0 as it is;
# * any other op where an element that is written is read only at the index that
#   writes it (``x.mul_(x)`` through a non-dense view).

_COPIES = frozenset({"copy_", "setitem_", "__setitem__"})
_MAX_CHECKED = 1 << 22


def _storage_offsets(t: torch.Tensor) -> torch.Tensor:
    """Each element's storage offset, in ``t``'s index order (flattened)."""
    offsets = torch.full((), t.storage_offset(), dtype=torch.int64)
    for size, stride in zip(t.shape, t.stride()):
        offsets = offsets.unsqueeze(-1) + torch.arange(size, dtype=torch.int64) * stride
    return offsets.reshape(-1)


def _order_independent(x: torch.Tensor, written: torch.Tensor, is_copy: bool) -> bool:
    """Whether writing ``written`` from operand ``x`` gives the same result in any element order
    (Note [overlaps eager does not check]). Unsure (other storages, too large): False."""
    if x.numel() == 0 or written.numel() == 0:
        return True
    real = x.device.type != "meta" and written.device.type != "meta"
    if real and x.untyped_storage().data_ptr() != written.untyped_storage().data_ptr():
        return not may_overlap(x, written)
    if written.numel() > _MAX_CHECKED:
        return False
    try:
        src = _storage_offsets(x.broadcast_to(written.shape))
    except RuntimeError:
        return False
    dst = _storage_offsets(written)
    if is_copy:  # every element both written and read is written from itself
        both = torch.isin(dst, src)
        return bool((src[both] == dst[both]).all())
    read_written = torch.isin(src, dst)  # an element written is read only where it is written
    return bool((src[read_written] == dst[read_written]).all())
