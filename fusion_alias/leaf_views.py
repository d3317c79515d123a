"""Torch functions Thunder hands over as leaf symbols whose result is exactly an argument's memory.

The sibling of ``fresh_results.py`` (leaf symbols whose result is always new memory): the alias
analysis reads every other leaf symbol as "may alias its arguments, cannot tell how" (aliasing.py,
Note [unknown ops alias conservatively]).
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol

from fusion_alias import ops
from fusion_alias.errors import AliasInputError


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
    return b.sym.name == "detach" or (ops.is_view(b) and bool(b.args) and getattr(b.args[0], "name", None) in detached)


def detached_names(flat, requires) -> frozenset:
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
    requires grad by eager's rules (``autograd_functionalize._requires_grad``)."""
    names: set = set()
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
