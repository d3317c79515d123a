"""A gradient rule for ``prims.flip``, which Thunder 0.2.6 lacks.

Note [flip's gradient]
----------------------
``torch.flip(x, dims)`` reverses ``x`` along ``dims``: ``y[i] = x[n - 1 - i]``. Each element of ``x`` lands in
exactly one element of ``y``, so the gradient is the cotangent reversed the same way: ``dx = flip(dy, dims)``
(eager's ``FlipBackward0`` computes exactly that). Thunder 0.2.6 has no rule for ``prims.flip`` and raised
"Failed to find a gradient transform for bound symbol ... prims.flip" in every call that computes gradients
through ``x.flip(0)`` (plain ``thunder.jit`` too): ``x / x.flip(0)``, ``torch.maximum(x, x.flip(0))``, fuzz seed
70020 #5 (``fresh --grad``), where the read of ``b.flip(0)`` came after a write of ``b``. Registered once, on
import, for every Thunder compilation in the process; it adds a rule where there was none.
"""

from __future__ import annotations

import thunder.core.prims as prims
from thunder.core.transforms import _grad_fn_map, get_grad, put_grad, register_grad


def _flip_grad(a, dims):
    result = prims.flip(a, dims)
    put_grad(a, prims.flip(get_grad(result), dims))
    return result


if prims.PrimIDs.FLIP not in _grad_fn_map:  # (a later Thunder with a rule of its own keeps it)
    register_grad(prims.PrimIDs.FLIP, _flip_grad)
