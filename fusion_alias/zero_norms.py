"""``F.normalize`` of an all-zero slice, with eager's gradient.

Note [a norm's gradient at zero]
--------------------------------
Eager's ``F.normalize(a, p, dim, eps)`` is ``a / a.norm(p, dim, keepdim=True).clamp_min(eps)``, and the
norm's backward is masked where the norm is 0 (``norm_backward``: ``grad / norm`` filled with 0 there).
Thunder 0.2.6 computes the norm as ``sum(|a| ** p) ** (1 / p)``, whose ``pow`` gradient at a zero sum is
``0 ** (1 / p - 1) = inf``; the clamp hands it a zero gradient, and ``0 * inf`` is NaN. So a zero row
(padding, a masked embedding) got a NaN gradient where eager's is 0, silently (plain ``thunder.jit``
too)::

    w = torch.zeros(1, 3, requires_grad=True)
    F.normalize(w).sum().backward()        # eager w.grad [[0, 0, 0]]; Thunder [[nan, nan, nan]]

Here the root is taken of a sum that is never zero, and a zero sum's norm is 0 by a ``where``::

    s = sum(|a| ** p)        norm = where(s == 0, 0, where(s == 0, 1, s) ** (1 / p))

so the values are Thunder's (``0 ** (1 / p)`` is 0) and the gradient through a zero sum is 0. For
``float32``/``float64`` and a finite ``p`` other than 0; other calls are Thunder's own (a half-precision
input is reduced in ``float32`` there, with its NaN at zero: docs/limits.md).
"""

from __future__ import annotations

from numbers import Number

import torch
from thunder.core import dtypes
from thunder.core.langctxs import Languages, langctx
from thunder.core.symbol import Symbol
import thunder.torch as ltorch

from fusion_alias.wrapped_lookasides import wrap_lookasides

from fusion_alias import clamp_ties


def _normalized(a, p=2.0, dim=1, eps=1e-12):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    x = a if p % 2 == 0 else ltorch.abs(a)
    s = ltorch.sum(ltorch.pow(x, p), dims, True)
    zero = ltorch.eq(s, 0)
    norm = ltorch.where(zero, 0.0, ltorch.pow(ltorch.where(zero, 1.0, s), 1.0 / p))
    return ltorch.true_divide(a, clamp_ties.clamp(norm, eps))


normalize = Symbol(name="normalize", meta=langctx(Languages.TORCH)(_normalized), id="fusion_alias.normalize")


def _ours(a, p, out) -> bool:
    finite_p = isinstance(p, Number) and not isinstance(p, bool) and p not in (0, float("inf"), -float("inf"))
    return out is None and finite_p and getattr(a, "dtype", None) in (dtypes.float32, dtypes.float64)


def _lookaside(previous):
    def traced(a, p=2.0, dim=1, eps=1e-12, out=None):
        if _ours(a, p, out):
            return normalize(a, p, dim, eps)
        return previous(a, p, dim, eps, out)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [a norm's gradient at zero] for ``torch.nn.functional.normalize``."""
    wrap_lookasides(executor, torch.nn.functional.normalize, _lookaside)
