"""Where a tensor's gradient goes, by eager's rules, for the functionalization before Thunder's autodiff
(``autograd_functionalize.py``, ``functional_rewrite.py``): which names require grad, which tensor's history an
input's gradient enters, which writes replace a gradient, and reads eager's autograd cuts off.
"""

from __future__ import annotations

import torch
import thunder.core.dtypes as dtypes
from thunder.core.proxies import ProxyTag, TensorProxy

from fusion_alias import ops
from fusion_alias.errors import AliasInputError
from fusion_alias.gather_views import is_replayed_view
from fusion_alias.gradient_operands import gradient_operands
from fusion_alias.leaf_views import detaches


def requires_grad_by_name(flat, info, tensor_inputs, step_outputs=frozenset()):
    """Whether a name of ``flat`` requires grad after the program, by eager's rules for memory
    (Note [outputs no gradient reaches]): a predicate over names."""
    root = info.root
    memory = {root.get(p.name, p.name) for p in tensor_inputs if p.requires_grad}  # memories that require grad
    values: set = set()  # names computed from something that requires grad
    # ``x.detach()`` and views of it share ``x``'s memory but require no grad (Note [a write-back no
    # gradient reaches]); a write into them with a value that requires grad is not followed here
    detached_names: set = set()

    def requires(n: str) -> bool:
        return n not in detached_names and (n in values or root.get(n, n) in memory)

    for b in flat:
        if ops.is_copy(b):
            src, dst = b.args[0], b.args[1]
            if isinstance(src, TensorProxy) and requires(src.name) and b.kwargs.get("grad_enabled", True):
                memory.add(root.get(dst.name, dst.name))
            elif isinstance(dst, TensorProxy) and dst.name in detached_names:
                # eager's ``t.neg_()`` of a detached ``t`` returns ``t`` itself: no grad (fuzz seed 20602 #39,
                # --grad: ``t2 = h.sin().detach(); return t2.neg_()`` came back requiring grad)
                detached_names.update(o.name for o in b.flat_outs if isinstance(o, TensorProxy))
            continue
        if detaches(b, detached_names):
            detached_names.update(o.name for o in b.flat_outs if isinstance(o, TensorProxy))
            continue
        if is_replayed_view(b):
            continue  # a view requires grad when its memory does
        operands = gradient_operands(b.sym.name, [a for a in b.flat_args if isinstance(a, TensorProxy)])
        if any(requires(a.name) for a in operands):  # (``zeros_like(t)`` requires no grad: gradient_operands.py)
            for o in b.flat_outs:
                detached = ProxyTag.DETACHED_AUTOGRAD_GRAPH in o.tags if isinstance(o, TensorProxy) else True
                # an integer or bool result requires no grad in eager, nor does what is computed from it
                # alone: ``(b < 0).float()`` of ``b`` that requires grad (fuzz seed 20415 #166, basic --grad)
                if (isinstance(o, TensorProxy) and dtypes.is_inexact_dtype(o.dtype)
                        and (not detached or o.name in step_outputs)):
                    values.add(o.name)
                    if root.get(o.name) == o.name:
                        memory.add(o.name)
    return requires


def sources_of_other_gradients(flat, requires, root) -> frozenset:
    """The values written in grad mode, by ``copy_`` or ``d[key] = v``, into memory that requires grad, whose
    gradient is not that memory's: values that require no grad, values made under ``torch.no_grad()`` (and views
    of them), and values rooted in another tensor than the destination (another input). Such a write replaces
    the gradient of what it writes even where it writes the values there already (Note [a copy from itself
    detached], noop_copies.py: an input ``x = h.detach()[1]``, or ``h[1]`` taken under ``torch.no_grad()``,
    which requires grad with no history, copied into ``h[1]``; ``with no_grad(): t0 = h[1]`` in the program,
    nograd fuzz generator seed 25000 #8)."""
    found = set()
    gradless: set = set()  # made under no_grad (Thunder's tag), or views of such
    for b in flat:
        if ops.is_copy(b):
            value, dst = b.args[0], b.args[1]
        elif "setitem" in b.sym.name and len(b.args) > 2:
            value, dst = b.args[2], b.args[0]
        else:
            outs = [o for o in b.flat_outs if isinstance(o, TensorProxy)]
            if any(ProxyTag.DETACHED_AUTOGRAD_GRAPH in o.tags for o in outs) or (
                    is_replayed_view(b) and b.args and getattr(b.args[0], "name", None) in gradless):
                gradless.update(o.name for o in outs)
            continue
        if not (isinstance(value, TensorProxy) and isinstance(dst, TensorProxy)) or not b.kwargs.get("grad_enabled", True):
            continue
        if requires(dst.name) and (not requires(value.name) or value.name in gradless
                                   or root.get(value.name) != root.get(dst.name)):
            found.add(value.name)
    return frozenset(found)


def own_gradient(t: torch.Tensor) -> bool:
    """Whether ``t`` requires grad and is a view whose gradient does not enter its ``_base``'s history: a view made
    under ``torch.no_grad()``, a leaf that is itself a view, or a view of such a leaf (its ``_base`` requires no
    grad). Eager rebuilds such a view's history from its ``_base`` after a write of its memory (Note [a view of
    a leaf read after a no_grad write]); guard.py keys on it (Note [views with a gradient of their own])."""
    return t.requires_grad and t._base is not None and (t.grad_fn is None or not t._base.requires_grad)


def autograd_base(t: torch.Tensor) -> torch.Tensor:
    """The tensor whose history ``t``'s gradient goes into: the base it is a view of, or itself.

    A view made under ``torch.no_grad()`` of a tensor that requires grad requires grad too, with no history
    (``grad_fn`` None): its gradient reaches nothing, not its base, so it is its own. Taken for its base's,
    ``with no_grad(): x = w[0]`` passed beside ``w``, written through ``x`` under ``no_grad`` and read through
    ``w``, gave ``w.grad[0]`` zero where eager gives ``x`` (hostile probe, session 25): the joined base took row
    0's gradient from ``x``."""
    if t._base is not None and not (t.requires_grad and t.grad_fn is None):
        return t._base
    return t


# Note [a view of a leaf read after a no_grad write]
# -------------------------------------------------
# A leaf that requires grad is written only under ``torch.no_grad()`` (eager rejects the rest). When the
# leaf is itself a view of a tensor that requires no grad (``w = torch.arange(12.).view(3, 4)
# .requires_grad_()``), a view of it made before such a write (``v = w[0]`` in the program, or an input
# ``x = w[0]`` passed beside ``w``) and read after it has its history rebuilt by eager from that base, and
# the rebuilt history does not reach ``w``: ``v = w[0]; with no_grad(): w.mul_(0.5); return (v * 2).sum()
# + w.sum()`` gives ``w.grad`` 1 everywhere (hostile probe, session 25; torch 2.9.1,
# ``v.grad_fn.next_functions == ((None, 0),)``), where the replay of the view on the written value carried
# the gradient to ``w`` (3 in row 0). An input that is a view of such a leaf (``x = w[2]``, passed without
# ``w``: its ``_base`` is the tensor that requires no grad) is rebuilt alike, and read after a write of its
# memory is refused too (nograd fuzz generator, seed 25000 #41). Refused. A leaf made directly (no ``_base``) keeps its views'
# gradients in eager, as the replay does; the leaf itself, and views taken after the write, read as before.
def check_leaf_view_read(name: str, is_view: bool, root: str, members, leaf_views: frozenset,
                         cut_views: frozenset = frozenset()) -> None:
    """Refuse a read of ``name`` after a write of its memory (Note [a view of a leaf read after a no_grad write]):
    a view made before the write, of memory that holds a leaf in ``leaf_views`` or an input in ``cut_views``
    (views of such a leaf, whose ``_base`` requires no grad); an input in ``cut_views`` itself; another input
    joined with such a leaf (``is_view``: ``name`` is not its root). The leaf itself reads as before."""
    if not any(m in leaf_views or m in cut_views for m in members):
        return
    if is_view or root in cut_views or root not in leaf_views:
        raise AliasInputError(
            f"fusion_alias: in a call that computes gradients, {name} is read after a write into the memory of "
            f"a leaf tensor that requires grad and is itself a view (w = base.view(...).requires_grad_()), of "
            "which it is a view made before the write: not supported (eager PyTorch then rebuilds the view's "
            "history from the base that requires no grad, and its gradient no longer reaches the leaf). "
            "Workaround: take the view again after the write, or make the leaf with .clone() first")
