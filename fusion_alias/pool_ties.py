"""``F.max_pool1d`` with eager's gradient at ties.

Note [max_pool1d's gradient at a tie]
-------------------------------------
Eager's 1-d max pooling hands each window's gradient to the index of its first maximum, as 2-d and 3-d
pooling do. Thunder 0.2.6 runs ``max_pool2d``/``max_pool3d`` as torch's own ops with indices (eager's
gradient), but decomposes ``max_pool1d`` into reductions whose gradient is shared among tied maxima.
After ``relu`` a window of zeros is a tie, so a conv-relu-pool stack got other weight gradients than
eager's, silently (plain ``thunder.jit`` too)::

    F.max_pool1d(torch.tensor([[[1., 1.]]], requires_grad=True), 2)   # eager grad [1, 0]; Thunder [.5, .5]

Here ``max_pool1d`` is traced as ``max_pool2d`` over a unit height (``(1, k)`` windows of ``x.unsqueeze(-2)``),
the same values, with torch's gradient. Eager's signature is taken as it is (its sixth positional argument is
``ceil_mode``, Thunder's is ``return_indices``); ``return_indices=True`` stays Thunder's (refused there).
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _one(x):
    return x[0] if isinstance(x, (tuple, list)) else x


def _lookaside(previous):
    def traced(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        if return_indices:
            return previous(input, kernel_size, stride, padding, dilation, return_indices=True, ceil_mode=ceil_mode)
        stride = None if stride is None or (isinstance(stride, (tuple, list)) and not stride) else (1, _one(stride))
        rows = ltorch.unsqueeze(input, -2)
        pooled = ltorch.max_pool2d(rows, (1, _one(kernel_size)), stride, (0, _one(padding)), (1, _one(dilation)),
                                   False, bool(ceil_mode))
        return ltorch.squeeze(pooled, -2)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [max_pool1d's gradient at a tie]."""
    wrap_lookasides(executor, torch.nn.functional.max_pool1d, _lookaside, torch.max_pool1d)
