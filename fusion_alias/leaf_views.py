"""Torch functions Thunder hands over as leaf symbols whose result is exactly an argument's memory.

The sibling of ``fresh_results.py`` (leaf symbols whose result is always new memory): the alias
analysis reads every other leaf symbol as "may alias its arguments, cannot tell how" (aliasing.py,
Note [unknown ops alias conservatively]).
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy
from thunder.core.symbol import BoundSymbol


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

    Only in a trace that computes no gradient (``analyze``'s ``detach_is_view``): where gradients flow,
    ``d = x.detach(); d.mul_(2); return x * 3`` must write ``x``'s memory without the write reaching
    ``x``'s gradient (eager's factor is 3, not 6). Read as a view there, the functionalization before
    Thunder's autodiff made the write an update of ``x``'s value, and the gradient went through it; such
    programs stay refused (autograd_functionalize.py).
    """
    return (bsym.sym.name == "detach" and not bsym.subsymbols and len(bsym.args) == 1 and not bsym.kwargs
            and isinstance(bsym.args[0], TensorProxy) and isinstance(bsym.output, TensorProxy))
