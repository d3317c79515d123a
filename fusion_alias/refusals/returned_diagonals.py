"""A refusal in calls that compute gradients: a returned ``diagonal()`` of memory the caller also holds
(Note [a returned diagonal is a copy in a training call])."""

from __future__ import annotations

import thunder.core.prims as prims
from thunder.core.proxies import TensorProxy

from fusion_alias.aliasing import _view_names, proxy_args
from fusion_alias.errors import AliasInputError

# Note [a returned diagonal is a copy in a training call]
# -------------------------------------------------------
# ``x.diagonal()`` is a view in eager: a later write into it reaches ``x``, and one into ``x`` reaches it.
# In a call that computes gradients Thunder 0.2.6's autodiff decomposes ``diagonal`` into a gather, so
# the output is a new tensor with the right values and gradients, but not ``x``'s memory (session 30
# probe; plain ``thunder.jit`` too)::
#
#     def f(x):                      # x = leaf * 1
#         return x.diagonal()
#
#     d = fusion_alias.jit(f)(x)
#     d.add_(1)                      # eager: x's diagonal is 1 more; here x is unchanged, silently
#
# The same for ``return y, y.diagonal()`` of an intermediate ``y`` (a write into one missed the other),
# ``x.t().diagonal()``, views of the diagonal (``x.diagonal()[1:]``), and a diagonal of an input beside
# writes into other inputs. Without gradients (and where nothing but the output holds the memory:
# ``(x * w).diagonal()`` alone) the result is eager's. So a returned output that is, through view ops, a
# ``diagonal`` of memory an input or another output holds is refused by name in a call that computes
# gradients; the values would be right, its aliasing not.
_DIAGONAL = "diagonal"


def check_returned_diagonals(top_bsyms, tensor_inputs) -> None:
    """Note [a returned diagonal is a copy in a training call]: refuse an output that is a diagonal (through
    view symbols) of an input's memory or of another output's."""
    views = _view_names()
    producer = {}
    for b in top_bsyms:
        for o in b.flat_outs:
            if isinstance(o, TensorProxy):
                producer[o.name] = b
    ret = next((b for b in reversed(top_bsyms) if b.sym.id is prims.PrimIDs.RETURN), None)
    if ret is None:
        return
    outs = [a for a in proxy_args(ret) if isinstance(a, TensorProxy)]
    if not any(_root(o.name, producer, views)[1] for o in outs):
        return
    inputs = {p.name for p in tensor_inputs}
    roots = [_root(o.name, producer, views) for o in outs]
    for i, (o, (root, diagonal)) in enumerate(zip(outs, roots)):
        shared = root in inputs or any(r == root for j, (r, _) in enumerate(roots) if j != i)
        if diagonal and shared:
            raise AliasInputError(
                f"fusion_alias: in a call that computes gradients, output {i} ({o.name}) is a diagonal() of memory "
                f"{'the input ' + root if root in inputs else 'another output'} holds: not supported (Thunder's "
                "autodiff returns a copy, so a later in-place write into either would not reach the other, as it "
                "does in eager). Workarounds: return `.diagonal().clone()`, or take the diagonal after the call")


def _root(name: str, producer: dict, views: frozenset):
    """``(the tensor name reaches through view symbols, whether a diagonal is among them)``."""
    diagonal = False
    for _ in range(len(producer) + 1):
        b = producer.get(name)
        if b is None or b.sym.name not in views or not b.args or not isinstance(b.args[0], TensorProxy):
            return name, diagonal
        diagonal = diagonal or b.sym.name == _DIAGONAL
        name = b.args[0].name
    return name, diagonal
