"""Spellings of out-of-place statements of the basic generator (``gen_basic._Gen``) that read an operand
through an op fusion_alias does not fuse and whose eager result keeps the operand's layout, a class no
generator made before session 21.

Note [opaque-op spellings keep the stream]
    Session 21. A session-21 hand probe found ``t0 = x.t().flip(0)`` taken for a contiguous tensor, where
    eager's keeps the transposed layout (``empty_like``), so ``t0.t().reshape(-1)`` was decided a copy and a
    write through it lost (``opaque_layouts.py``, Note [an opaque op's result keeps its operand's layout]);
    ``torch.ones_like(x.t())`` the same. The generators read operands through list keys (a gather, session
    18) but never through ``flip`` or a ``*_like`` factory. Here an out-of-place expression ``e`` over ``v``
    has, with probability 0.15, every read of ``v`` spelled as one of

    * ``v.flip(d)``: the same elements in another order (values change, not shape, dtype or strides);
    * ``v.flip(d).flip(d)``: ``v``'s values, through two opaque results;
    * ``torch.zeros_like(v).add(v)``: ``v``'s values, through a factory of ``v``'s layout; the only form
      in ``--grad`` programs (``out_spellings.GRAD``): Thunder 0.2.6 has no gradient for ``prims.flip``.

    Kept only where the result has ``e``'s shape, dtype and strides (``identity_spellings.if_same_result``),
    so a later ``view`` or ``reshape`` of it is accepted, and a view, exactly where it was. Drawn from
    ``opaque``, a stream of its own seeded from ``rng``'s state without drawing from it, after every draw of
    ``rng`` for the statement: every program of every seed is the one it was, with some statements spelled so
    (``tests/test_fuzz.py::test_opaque_op_spellings_keep_every_stream``).
"""

from __future__ import annotations

import random
import re

import torch

from fusion_alias.fuzz.out_spellings import GRAD


def _through(opaque: random.Random, t: torch.Tensor, v: str) -> str | None:
    dims = [d for d in range(t.dim()) if t.shape[d] >= 2]
    form = opaque.choice(("flip", "flip2", "zeros_like"))
    if form == "zeros_like" or not dims or GRAD.get():
        return f"torch.zeros_like({v}).add({v})"
    d = opaque.choice(dims)
    return f"{v}.flip({d})" if form == "flip" else f"{v}.flip({d}).flip({d})"


def opaque_in(opaque: random.Random, env: dict, e: str, v: str) -> str:
    """``e`` (an out-of-place expression over ``v``) with every read of ``v`` through an opaque op that keeps
    its layout, drawn with probability 0.15."""
    if opaque.random() >= 0.15:
        return e
    t = env.get(v)
    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return e
    spelled = _through(opaque, t, v)
    return re.sub(rf"(?<![\w.]){re.escape(v)}(?![\w\[])", lambda _m: spelled, e)
