"""Spellings of a ``torch._foreach_*_`` statement of the basic generator (``gen_basic._Gen._foreach``) that
make, on purpose, the two classes earlier sessions found only by chance or not at all.

Note [foreach spellings keep the stream]
    Session 17. ``docs/limits.md`` names two foreach classes whose eager gradient is not that of its value
    (refused in calls that compute gradients, run in turn without them: ``foreach_lookasides.py``, Note [a
    foreach op given one tensor twice]; ``refusals/foreach_lists.py``): *crossed operands*, where an earlier
    position's write reaches a later position's operand (``torch._foreach_add_([a[0], a[1]], [a[1], a[0]])``),
    and *the result of an in-place op in the list* (``b = a.add_(1)`` then a list of ``[a, b]``: one memory
    under two trace names). The generator drew the first only where ``operand`` happened to pick so, the
    second never. Here:

    * ``crossed``: the operands of a binary, lerp or addcmul/addcdiv foreach become the written list itself,
      rotated (``[x, y], [y, x]``; ``[x, y, z], [y, z, x]``), where each operand broadcasts into its
      destination, has its dtype, and is either apart from it or the same view (else eager raises or the op
      is ill-defined, and the generator would drop the statement: another program);
    * ``crossed_rows``: a binary or lerp foreach over ``x`` spelled over two of its rows, each the other's
      operand (``torch._foreach_add_([x[0], x[1]], [x[1], x[0]])``: rows apart, so eager runs it in turn), in
      place of its lists;
    * ``result_in_list``: where the list names one variable twice, one of the two is spelled as the result of
      an in-place op on it (``[x, x.add_(1)]``, ``[x.add_(1), x]``): the same memory, a second trace name, a
      value one higher.

    They change only which memory the statement reads and writes and values, never a variable's shape, dtype or
    memory (the rows are written inline, not as variables), and
    are drawn from ``spell``, a fourth generator seeded from ``rng``'s state without drawing from it (apart
    from ``side`` and the mask spellings' ``spell``), after every draw of ``rng`` the statement makes. So every
    program of every seed is the one it was, with some foreach statements spelled so.
"""

from __future__ import annotations

import random

import torch

from fusion_alias.fuzz.hazard import _has_internal_overlap, _overlaps


def _apart_or_same(d: torch.Tensor, s: torch.Tensor) -> bool:
    if not _overlaps(d, s):
        return True
    return d.shape == s.shape and d.stride() == s.stride() and d.storage_offset() == s.storage_offset()


def _fits(d: torch.Tensor, s: torch.Tensor) -> bool:
    try:
        broadcast = tuple(torch.broadcast_shapes(d.shape, s.shape)) == tuple(d.shape)
    except RuntimeError:
        return False
    return broadcast and d.dtype == s.dtype and _apart_or_same(d, s)


def crossed(spell: random.Random, env: dict, xs: list[str], ys: list[str]) -> list[str]:
    """``ys``, or (drawn from ``spell``) ``xs`` rotated by one where every operand fits its destination."""
    if len(xs) < 2 or spell.random() >= 0.3:
        return ys
    rot = xs[1:] + xs[:1]
    if all(_fits(env[d], env[s]) for d, s in zip(xs, rot)):
        return rot
    return ys


def result_in_list(spell: random.Random, env: dict, xs: list[str]) -> list[str]:
    """``xs`` as written in the list: where one variable is named twice, (drawn from ``spell``) one of the two
    spelled as the result of an in-place op on it."""
    repeats = [j for j in range(1, len(xs)) if xs[j] in xs[:j]]
    if not repeats or spell.random() >= 0.5:
        return list(xs)
    j = spell.choice(repeats)
    i = xs.index(xs[j]) if spell.random() < 0.5 else j
    t = env[xs[i]]
    if t.dtype == torch.bool or t.is_complex():
        return list(xs)
    out = list(xs)
    out[i] = f"{xs[i]}.add_(1)"
    return out


def crossed_rows(spell: random.Random, env: dict, x: str) -> tuple[str, str] | None:
    """(list, operands) of a foreach over two rows of ``x`` crossed, or None (not drawn, or ``x`` has no two
    rows apart)."""
    t = env[x]
    if spell.random() >= 0.25 or t.dim() < 1 or t.shape[0] < 2 or _has_internal_overlap(t):
        return None
    i, j = spell.sample(range(t.shape[0]), 2)
    return f"[{x}[{i}], {x}[{j}]]", f"[{x}[{j}], {x}[{i}]]"
