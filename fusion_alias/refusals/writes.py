"""Refusals of ``copy_`` writes eager rejects: shapes that do not broadcast, leaves, expanded destinations.

``_check_writes`` walks the flattened trace once, in program order, and for each
``copy_`` (every in-place write, after Thunder's decomposition) asks, in turn:

Note [a value that does not broadcast to its destination]
---------------------------------------------------------
::

    def f(a, b): b.add_(a.sin()); return b        # called with (x, x[0, 0]), x of shape (5, 5)

Eager: "output with shape [] doesn't match the broadcast shape [5, 5]". The
trace still holds ``copy_(sin(a) + b, b)``, a (5, 5) value into a 0-dim buffer;
without the check the backend failed with an IndexError naming nothing of the
program (a bench report). We raise eager's message.

Note [writes into a leaf that requires grad]
--------------------------------------------
::

    w = torch.zeros(2, requires_grad=True); f(w)   # f: w.add_(1); return w * 2

Eager: "a leaf Variable that requires grad is being used in an in-place
operation". We raise eager's message, first: without this check the write
would still be refused, by Note [writes into inputs that require grad]
(``autograd.py``), in fusion_alias's words rather than the ones a user of
eager PyTorch knows.

Note [writes into an expand()ed tensor]
---------------------------------------
::

    x[0].expand(2, 2).add_(1)     # eager: "more than one element of the written-to
                                  # tensor refers to a single memory location"
    x[0].expand(2, 2).zero_()     # eager accepts: one value per memory location

The destination's view chain is replayed on the real input and torch asked for
internal overlap. Without the check, the region's write-back stores every
element of the expanded value, two of them into each location of ``x[0]``: the
reference backend's own ``copy_`` then fails with torch's message from inside
the region (checked), and nvFuser promises no order among such stores. The
writes eager accepts (``fill_``/``zero_``, ``masked_fill_``, ``t[key] = v`` into
a slice without internal overlap: ``_accepted_on_expanded``) are refused too,
by name, since Thunder writes the whole expanded tensor back.
"""

from __future__ import annotations

import torch
from thunder.core.proxies import TensorProxy

from fusion_alias import ops
from fusion_alias.aliasing import AliasInfo, flattened, proxy_outs, shape_reader, tensor_outs
from fusion_alias.errors import AliasInputError
from fusion_alias.refusals.autograd import (
    WriteIntoGradInput,
    _check_write_into_differentiable_view,
    _is_differentiable,
    _propagate_differentiable,
)
from fusion_alias.refusals.inplace_ops import _describe_setitem
from fusion_alias.refusals.operands import _check_operand_overlap, _compares_operands, _written_view
from fusion_alias.views import replay_view


_COPY_ID = ops.COPY_ID


class _ProducerLookup:
    """name -> the bsym producing it, built only if a check needs one (most programs never do)."""

    def __init__(self, bsyms):
        self._bsyms = bsyms
        self._map: dict | None = None

    def get(self, name, default=None):
        if self._map is None:
            self._map = {o.name: b for b in self._bsyms for o in proxy_outs(b) if isinstance(o, TensorProxy)}
        return self._map.get(name, default)


def _check_writes(
    bsyms, info: AliasInfo, actual: dict, proxies: dict, inplace_ops=None, grad_inputs=(), input_names=None
) -> None:
    """Reject in-place writes eager PyTorch rejects, with an error that names the problem.

    In program order: an in-place op whose operand overlaps what it writes
    (``inplace_ops``: the user's in-place ops by the name of the value they write,
    see ``_check_operand_overlap``), then for each ``copy_``: a value that does not
    broadcast to its destination, a write into a leaf that requires grad, a write
    into an input in ``grad_inputs`` (Note [writes into inputs that require grad];
    eager accepts these, fusion_alias refuses them), and a
    destination whose elements overlap each other (an ``expand()``ed view, or
    an input with zero strides). The last is found exactly by replaying its view chain
    on the real input (or on a meta tensor of a fresh root's shape) and asking
    torch for internal overlap: ``a.expand(2, 6, 4).select(0, 1)`` is fine,
    ``a.expand(2, 6, 4)`` is not. ``input_names``: the trace's tensor inputs, for
    ``_check_operand_overlap``.
    """
    producers = _ProducerLookup(bsyms)
    grad_members = info.members() if grad_inputs else {}
    grad_groups = {info.group(n) for n in grad_inputs if n in info.root}
    # what requires grad, in program order: data flow from the inputs that do, and
    # memory that a write of such a value made so (the forward trace's proxies do not say)
    differentiable = set(grad_inputs)
    ops_by_write = inplace_ops or {}
    # (the ops whose operand check may compare tensors or refuse: Note [operand checks the analysis decides])
    pending = {name: op for name, op in ops_by_write.items()
               if op.operands and _compares_operands(op, info, actual, input_names)}
    metas: dict = {}
    shape_of = shape_reader()
    # the names made so far, in program order (the inputs first): only the gradient checks ask
    made = set(info.root) - {o.name for b in bsyms for o in tensor_outs(b)} if grad_inputs else None
    for b in bsyms:
        if pending:  # (a symbol's outputs are looked up only when a check asks: most programs ask none)
            for o in flattened(b)[2]:
                if (op := pending.pop(o._name, None)) is not None:  # (aliasing.py, Note [proxy names read directly])
                    _check_operand_overlap(op, info, actual, proxies, metas, input_names)
        if grad_inputs:
            _propagate_differentiable(b, info, differentiable)
            made.update(o.name for o in flattened(b)[4])
        if b.sym.id is not _COPY_ID:
            continue
        dst = b.args[1]
        src_shape = shape_of(b.args[0]) if isinstance(b.args[0], TensorProxy) else ()
        dst_shape = shape_of(dst)
        fits = src_shape == dst_shape or _broadcasts_to(src_shape, dst_shape)
        if not fits:
            raise AliasInputError(
                f"fusion_alias: output with shape {list(dst.shape)} doesn't match the broadcast shape "
                f"{list(src_shape)} of the value written into {dst.name} (eager PyTorch rejects this too)"
            )
        root = info.root.get(dst._name)
        t = actual.get(root)
        if t is not None and t.is_leaf and t.requires_grad and _grad_mode_of(b):
            raise AliasInputError(
                f"fusion_alias: in-place write into input {root}: a leaf Variable that requires grad "
                "is being used in an in-place operation (eager PyTorch rejects this too)"
            )
        if grad_inputs and root not in grad_inputs:
            if info.group(dst.name) in grad_groups:
                # a view of an input that requires grad made by an op we cannot see through (torch.narrow)
                raise AliasInputError(
                    f"fusion_alias: in-place write into {dst.name}, which may be a view of an input that requires "
                    "grad (it shares memory with one through an op fusion_alias cannot see through), in a call "
                    "that computes gradients: not supported. Thunder 0.2.6's autograd loses such writes or the "
                    "gradient through them without an error. Workarounds: write into a copy (a = a.clone()), or "
                    "run the call under torch.no_grad() when no gradient is needed"
                )
            if dst.name in differentiable or root in differentiable:
                _check_write_into_differentiable_view(dst.name, root, info, grad_members, made)
            if _is_differentiable(b.args[0], info, differentiable):
                differentiable.add(root)  # the memory now holds values that require grad
        if root in grad_inputs:
            what = f"input {root}" if dst.name == root else f"{dst.name} (a view of input {root})"
            raise WriteIntoGradInput(
                f"fusion_alias: in-place write into {what}, which requires grad, in a call that computes "
                "gradients: not supported. Eager PyTorch accepts it, but Thunder 0.2.6's autograd loses such "
                "writes or the gradient through them without an error, so fusion_alias refuses instead of "
                "returning a wrong value or gradient. Workarounds: write into a copy (a = a.clone()), or run "
                "the call under torch.no_grad() when no gradient is needed",
                tensor=t,
                grad_enabled=_grad_mode_of(b),
            )
        chain = info.chain.get(dst._name, ())
        if not chain and t is None:
            continue  # a fresh tensor the program made: contiguous, nothing overlaps
        base = t
        if base is None and root in proxies and isinstance(proxies[root], TensorProxy):
            base = torch.empty(tuple(proxies[root].shape), device="meta")
        if base is None:
            continue
        try:
            view = replay_view(base, chain)
        except Exception:  # a chain torch cannot replay as views: nothing to say
            continue
        if torch._debug_has_internal_overlap(view) != 1:
            continue
        src = producers.get(getattr(b.args[0], "name", None))
        what = f"input {root}" if t is not None and view is t else f"{dst.name} (a view of {root})"
        where = f"strides {tuple(view.stride())} on shape {tuple(view.shape)}"
        kind = _accepted_on_expanded(src, ops_by_write.get(_out_name(b)), info, actual, proxies, metas)
        if kind is not None:
            raise AliasInputError(
                f"fusion_alias: {kind} into {what}, whose elements overlap each other ({where}, "
                "an expand()ed tensor) is not supported by fusion_alias. Eager PyTorch accepts it (it writes "
                "each memory location once), but Thunder writes the whole expanded tensor back. Workaround: "
                "write into the tensor before expand() (e.g. base.zero_(), base[idx] = v), or clone() the "
                "expanded tensor if the write need not reach its base"
            )
        raise AliasInputError(
            f"fusion_alias: in-place write into {what}, whose elements overlap each other ({where}, "
            "an expand()ed tensor): more than one element of the written-to tensor refers to a single "
            "memory location (eager PyTorch rejects this too); clone() it first"
        )


def _grad_mode_of(copy_bsym) -> bool:
    """The grad mode the program ran its write in: ``copy_``'s ``grad_enabled``, which Thunder records
    at trace time (False inside the function's ``with torch.no_grad():``), else the global one.

    Note: ``with torch.no_grad(): p.sub_(g * lr)`` in a function called with grad
    enabled is accepted by eager; asking the global mode refused it as eager's leaf
    error.
    """
    return bool(copy_bsym.kwargs.get("grad_enabled", torch.is_grad_enabled()))


def _out_name(bsym):
    outs = proxy_outs(bsym)
    return outs[0].name if outs else None


def _accepted_on_expanded(src, op, info: AliasInfo, actual: dict, proxies: dict, metas: dict) -> str | None:
    """The name of a write eager accepts into an expand()ed tensor, or None if eager rejects it.

    Note: eager's fill_/zero_ and masked_fill_ write one value per memory location, so
    ``x[0].expand(4, 4).zero_()`` runs (it zeroes ``x[0]``). ``t[key] = v`` writes the
    slice ``t[key]``: fine when that slice has no internal overlap
    (``x[0].expand(4, 4)[1] = 2.0``), rejected when it has (``...[:] = 2.0``).
    """
    if op is None and src is not None and "setitem" in src.sym.name and isinstance(src.args[0], TensorProxy):
        op = _describe_setitem(src.args[0], src.args[1], src.args[2])  # the setitem_ Thunder already split
    if op is not None and op.name == "setitem_":
        if op.key is None:
            return None  # tensor index: index_put_ into an overlapping tensor, eager rejects it
        written = _written_view(op, info, actual, proxies, metas)
        if written is None or torch._debug_has_internal_overlap(written) == 1:
            return None
        return "__setitem__"
    if op is not None and op.name == "masked_fill_":
        return "masked_fill_"
    if src is not None and src.sym.id is ops.PrimIDs.FULL:
        return "fill_/zero_"
    return None


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))
