"""``ravel`` traced as eager defines it, ``contiguous().view(-1)``.

Note [ravel is contiguous, then a view]
---------------------------------------
Eager's ``x.ravel()`` (``torch.ravel(x)``) is ``x.contiguous().view(-1)``: a view of ``x`` when ``x`` is contiguous,
else a view of a contiguous copy. Thunder 0.2.6 runs it as one opaque torch op, which the alias analysis reads as
"may alias its input, cannot tell how" (aliasing.py, Note [unknown ops alias conservatively]): correct without
gradients, but in a call that computes gradients the rewrite could not relate the result to ``x``, and a read of
``x`` after a write through it was refused ("cannot express as views of one tensor")::

    r = a.ravel()              # a = w * 1, w requires grad: r is a view of a
    r.mul_(2)                  # writes a too
    return a.sum() + r.sum()   # was refused; eager: 4 * a.sum()

Traced as ``contiguous`` then ``view(-1)``, each is what fusion_alias already follows: ``contiguous`` decided from the
call's layouts (eager_copies.py, Note [contiguous() with gradients, as eager answers it]; layouts.py in the fusion
pass), ``view`` a view. Only the plain call; anything else keeps Thunder's op.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _as_contiguous_view(previous):
    def traced(a, *args, **kwargs):
        if isinstance(a, TensorProxy) and not args and not kwargs:
            return ltorch.view(ltorch.contiguous(a), -1)
        return previous(a, *args, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [ravel is contiguous, then a view]."""
    wrap_lookasides(executor, torch.ravel, _as_contiguous_view, torch.Tensor.ravel, with_symbol=True)
