"""Views Thunder 0.2.6 decomposes into a gather, followed as views by the functional rewrite of a call that
computes gradients (functional_rewrite.py).

Note [a diagonal is a view the rewrite replays by its own function]
-------------------------------------------------------------------
``t.diagonal()`` is a view in eager; Thunder decomposes it into ``reshape`` and ``take``, a gather that
copies, so flattened, a write through it would land in the gather's result (autograd_functionalize.py, Note
[views whose decomposition copies]). Kept whole, it was an op that may return a view, a root of its own in
its argument's memory group, and with gradients the most common spelling of a jitter on a matrix's
diagonal was refused as a read after a write the rewrite could not follow::

    t0 = a + 0.5
    t0.diagonal().add_(v)       # refused: "t0 is read after a write into memory it shares ..."
    return t0 * 2

The rewrite needs of a view only that its step can be replayed on a value (a read after a write: the
step on the memory's current value) and on the positions of the memory's elements (a write: the
positions the step selects, ``functional_rewrite._scatter``); a gather does both, as Thunder's own
``diagonal`` symbol, with its decomposition and gradient. So in the functional program's alias analysis
(``aliasing.analyze(..., gather_views=True)``) a ``diagonal`` of Thunder's torch module is a view step of
its argument, replayed by calling the symbol. Elsewhere (the fusion pass, the refusals) it stays an op
that may return a view. A returned diagonal of memory the caller holds stays refused
(refusals/returned_diagonals.py).
"""

from __future__ import annotations

from thunder.core.proxies import TensorProxy

from fusion_alias import ops

_GATHER_VIEWS = frozenset({"diagonal"})
_TORCH_MODULES = frozenset({"thunder.torch", "torch"})


def is_gather_view(bsym) -> bool:
    """Whether ``bsym`` is Thunder's ``diagonal`` of a tensor, with plain arguments (Note [a diagonal is a view
    the rewrite replays by its own function])."""
    sym = bsym.sym
    return (sym.name in _GATHER_VIEWS
            and getattr(getattr(sym, "module", None), "__name__", None) in _TORCH_MODULES
            and bool(bsym.args) and isinstance(bsym.args[0], TensorProxy) and isinstance(bsym.output, TensorProxy)
            and all(type(a) is int for a in bsym.args[1:]) and all(type(v) is int for v in bsym.kwargs.values()))


def is_replayed_view(bsym) -> bool:
    """A view prim, or a view the functional rewrite replays by its own symbol (:func:`is_gather_view`)."""
    return ops.is_view(bsym) or is_gather_view(bsym)
