"""``torch.lerp`` of a 0-d start and a larger end, with the result's shape in the trace.

Note [lerp's shape from a 0-d start]
------------------------------------
Thunder 0.2.6 broadcasts ``lerp``'s operands except 0-d tensors (it takes them as numbers) and
``prims.lerp`` gives its result the start's shape, so ``torch.lerp(d, c, 0.5)`` of a 0-d ``d`` and a
``(2, 3)`` ``c`` was declared 0-d in the trace while it computes a ``(2, 3)`` tensor. The values were
eager's, but whatever read the declared shape failed: ``.cummin(1)`` of it in a call that computes
gradients raised "dim 1 out of bounds" (fuzz ``ties`` generator, seed 50006 #57). Here a 0-d start
beside a larger end or weight is expanded to the broadcast shape first (its gradient, summed by
``expand``'s rule, is eager's). ``x.lerp_(...)`` writes ``x``'s own shape and is left as it is.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch

from fusion_alias.wrapped_lookasides import wrap_lookasides
from thunder.core.proxies import TensorProxy


def _shape(x) -> tuple:
    return tuple(x.shape) if isinstance(x, (TensorProxy, torch.Tensor)) else ()


def _lookaside(previous):
    def traced(start, end, weight, *args, **kwargs):
        shapes = [_shape(end), _shape(weight)]
        zero_dim_start = isinstance(start, (TensorProxy, torch.Tensor)) and start.ndim == 0
        if zero_dim_start and any(shapes) and not args and not kwargs:
            start = ltorch.expand(start, torch.broadcast_shapes(*shapes))
        return previous(start, end, weight, *args, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [lerp's shape from a 0-d start]."""
    wrap_lookasides(executor, torch.lerp, _lookaside, with_symbol=True)
