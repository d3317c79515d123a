"""Ops whose eager result is their input itself, traced as that input.

Note [ops eager returns as their input]
---------------------------------------
Eager's ``torch.positive(x)`` (of a non-bool ``x``), ``F.dropout(x, training=False)``, ``F.dropout(x, 0.0)`` and the
dropout of an empty ``x`` return ``x`` itself (``torch.positive(x) is x``). Thunder 0.2.6 traces ``positive`` as a
symbol of its own that its torch executor runs whole, and, in a call that computes gradients, ``dropout`` too: a
result the alias analysis cannot relate to ``x``. So a write after or through one, with gradients, was refused
("cannot express as views of one tensor"), where eager runs it (session 40 limit)::

    def f(x):                          # x = w * 1, w requires grad
        y = torch.positive(x)          # y is x
        x.add_(1.0)
        return y * 1                   # eager: (x + 1) * 1; was refused

Each is traced as its input itself here (``_dropout`` in inplace_lookasides.py for the dropouts), so a write through
either name is a write of one tensor, as in eager; a bool ``positive`` keeps Thunder's (eager's error).
``resolve_neg`` stays refused with gradients: whether it returns its input or a copy depends on a bit the trace does
not carry (docs/limits.md); an ``einsum`` that permutes one operand is a view since session 43 (einsum_views.py). ``contiguous`` is decided from the
call's layouts (eager_copies.py) and a ``repeat`` is a copy (fresh_results.py) since session 42; ``ravel`` is traced
as ``contiguous().view(-1)`` since session 43 (ravel_spelling.py).
"""

from __future__ import annotations

import torch
from thunder.core import dtypes
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides


def _itself(previous):
    def traced(a, *args, **kwargs):
        if isinstance(a, TensorProxy) and not args and not kwargs and not dtypes.is_boolean_dtype(a.dtype):
            return a
        return previous(a, *args, **kwargs)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [ops eager returns as their input] for ``torch.positive``."""
    wrap_lookasides(executor, torch.positive, _itself, torch.Tensor.positive, with_symbol=True)
