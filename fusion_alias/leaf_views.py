"""Torch functions Thunder hands over as leaf symbols whose result is exactly an argument's memory.

The sibling of ``fresh_results.py`` (leaf symbols whose result is always new memory): the alias
analysis reads every other leaf symbol as "may alias its arguments, cannot tell how" (aliasing.py,
Note [unknown ops alias conservatively]).
"""

from __future__ import annotations

import torch
from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.errors import AliasInputError
from fusion_alias.gather_views import is_replayed_view


def is_detach(bsym: BoundSymbol) -> bool:
    """``y = x.detach()`` as Thunder 0.2.6 traces it: a leaf symbol (torch's own, run by the torch
    executor) of one tensor, no keyword, one tensor out.

    Note [detach is the same view]
    ------------------------------
    ``x.detach()`` is ``x``'s memory with ``x``'s sizes, strides and offset: the same elements, a view
    with no step (as ``shallow_copy`` is). Read as an op the analysis cannot see through (Note [unknown
    ops alias conservatively]), its result was a root of its own in ``x``'s memory group, and
    ``x.mul_(x.detach())``, the full overlap eager accepts, was refused ("may share memory through an
    op whose result fusion_alias cannot relate to its input"). As an alias of ``x`` with no step, it has
    ``x``'s root, view chain and view key: the operand check finds the same view, and reads of it
    after a write of ``x`` are reads of ``x``'s memory. The symbol itself still runs outside regions
    (it is not in the op table).

    In the fusion pass only for a trace that computes no gradient (``analyze``'s ``detach_is_view``):
    where gradients flow, ``d = x.detach(); d.mul_(2); return x * 3`` must write ``x``'s memory without
    the write reaching ``x``'s gradient (eager's factor is 3, not 6). The functionalization before
    Thunder's autodiff reads it as a view with that rule (Note [reads through detach, after writes]),
    and hands the fusion pass a trace without writes.
    """
    return (bsym.sym.name == "detach" and not bsym.subsymbols and len(bsym.args) == 1 and not bsym.kwargs
            and isinstance(bsym.args[0], TensorProxy) and isinstance(bsym.output, TensorProxy))


def detaches(b: BoundSymbol, detached: set) -> bool:
    """Whether ``b``'s tensor results are detached tensors: ``b`` is ``detach``, or a view of a name
    in ``detached`` (the detached tensors so far)."""
    return b.sym.name == "detach" or (is_replayed_view(b) and bool(b.args) and getattr(b.args[0], "name", None) in detached)


def detached_names(flat, requires, seeds=frozenset()) -> frozenset:
    """Note [reads through detach, after writes]
    -------------------------------------------
    ``x.detach()`` is ``x``'s memory with no gradient (leaf_views.py, Note [detach is the same view]).
    In a call that computes gradients the rewrite takes it as that: an alias of ``x`` with no step
    (``aliasing.analyze(..., detach_is_view=True)``), whose reads are the memory's current value made
    a constant for the autodiff, and whose writes autograd does not see (the memory keeps its
    gradient path, as under ``torch.no_grad()``). Worked example, inputs ``(x0, x0[0:2])``::

        t0 = c.detach(); b[1::2] = -1.5; return torch.where(t0 > 0, t0, t0)

    reads ``c``'s elements as the write left them, with no gradient. A root of its own before, such a
    read after a write was refused as a memory the rewrite could not follow (the ``--grad`` fuzzer's
    most frequent refusal once it wrote ``.detach()`` spellings). The names returned: results of
    ``detach``, views of them, and ``copy_`` results that write into them. A write of a value that
    requires grad through one (``d = x.detach(); d.copy_(y)``: eager's ``d`` then carries ``y``'s
    gradient while ``x`` does not) is refused. ``requires``: a predicate over names, whether one
    requires grad by eager's rules (``autograd_functionalize._requires_grad``). ``seeds``: inputs that
    are detached tensors already (:func:`detached_inputs`)."""
    names: set = set(seeds)
    for b in flat:
        if ops.is_copy(b):
            src, dst = b.args[0], b.args[1]
            if isinstance(dst, TensorProxy) and dst.name in names:
                if isinstance(src, TensorProxy) and b.kwargs.get("grad_enabled", True) and requires(src.name):
                    raise AliasInputError(
                        f"fusion_alias: in a call that computes gradients, the program writes {src.name}, which "
                        f"requires grad, into {dst.name}, a tensor made by detach() (or a view of one), in place: "
                        "not supported (eager's result then carries the gradient its memory's other tensors do "
                        "not). Workaround: write into a clone, or write a detached value")
                names.update(o.name for o in b.flat_outs if isinstance(o, TensorProxy))
            continue
        if detaches(b, names):
            names.update(o.name for o in b.flat_outs if isinstance(o, TensorProxy))
    return frozenset(names)


def detached_inputs(flat, requires, input_groups, actual: dict) -> frozenset:
    """Note [an input that is a detached alias of one that requires grad]
    --------------------------------------------------------------------
    ``f(x0, x0.detach()[1])`` with ``x0`` a leaf that requires grad: the second input shares ``x0``'s
    memory and requires no grad, and eager's autograd does not relate the two. A write through it
    (``with no_grad(): x.add_(1)``, or under grad mode with a value that requires no grad) changes
    ``x0``'s elements and nothing of its history: a later read of ``x0`` has the new values and
    passes its gradient to ``x0`` whole, as after a ``no_grad`` write of ``x0`` itself. A read of
    ``x`` has no gradient. That is exactly what a name made by ``detach()`` inside the program is
    to the rewrite (Note [reads through detach, after writes]), so such an input is one from the
    start, and the rewrite may join it with ``x0`` as views of one base (functional_rewrite.py, Note
    [inputs that overlap, as views of one base]). Before, the two were roots of one memory group
    the rewrite could not relate, and a read after the write was refused (two thirds of the nograd
    fuzz generator's ``--grad`` runs).

    The names returned: inputs that require no grad and may overlap an input that does
    (``input_groups``, ``actual``: the call's tensors by name), except those into which the program
    writes a value that requires grad under grad mode (eager's ``x`` then carries that gradient
    while ``x0`` does not): those stay roots of their own, as before."""
    candidates: dict[str, str] = {}
    for group in input_groups:
        tensors = [(n, actual.get(n)) for n in group]
        if any(isinstance(t, torch.Tensor) and t.requires_grad for _, t in tensors):
            for n, t in tensors:
                if isinstance(t, torch.Tensor) and not t.requires_grad:
                    candidates[n] = n
    if not candidates:
        return frozenset()
    kept = set(candidates)
    for b in flat:
        if ops.is_copy(b):
            src, dst = b.args[0], b.args[1]
            origin = candidates.get(getattr(dst, "name", None))
            if origin is not None:
                if isinstance(src, TensorProxy) and b.kwargs.get("grad_enabled", True) and requires(src.name):
                    kept.discard(origin)
                candidates.update((o.name, origin) for o in b.flat_outs if isinstance(o, TensorProxy))
        elif is_replayed_view(b) and b.args and getattr(b.args[0], "name", None) in candidates:
            origin = candidates[b.args[0].name]
            candidates.update((o.name, origin) for o in b.flat_outs if isinstance(o, TensorProxy))
    return frozenset(kept)
