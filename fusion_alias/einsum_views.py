"""``torch.einsum`` of one operand that only reorders or diagonalizes its dimensions, traced as the view eager returns.

Note [an einsum that permutes is a view]
----------------------------------------
Eager's ``torch.einsum("ij->ji", x)`` (``"ijk->kij"``, the identity ``"ij->ij"``, the implicit ``"ji"``) returns a view of
``x`` with its dimensions permuted: ``y._base is x``, and a write through ``y`` writes ``x``. Thunder 0.2.6 hands
``einsum`` over whole, an op the alias analysis reads as "may alias its operand, cannot tell how" (aliasing.py, Note
[unknown ops alias conservatively]): in a call that computes gradients a read of ``x`` after a write through ``y``
was refused ("cannot express as views of one tensor")::

    y = torch.einsum("ij->ji", a)   # a = w * 1, w requires grad: y is a.t()
    y.mul_(2)                       # writes a
    return a.sum() + y.sum()        # was refused; eager: 4 * a.sum()

Such an equation, one operand whose letters each appear once on each side, is traced here as ``permute`` with the
order the output names, which every stage follows as the view it is.

Note [an einsum that takes a diagonal is a view]
------------------------------------------------
A letter repeated in the operand and kept in the output (``"ii->i"``, ``"iij->ji"``, ``"...ii->...i"``) is eager's
``diagonal`` of those dimensions, a view too: ``torch.einsum("ii->i", y).mul_(3)`` triples ``y``'s diagonal. Thunder
0.2.6 decomposes it into ``where(eye, y, 0).sum(1)``, a new tensor, and the write through it was lost, silently, with
and without gradients (session 46 probe; plain ``thunder.jit`` too)::

    y = x * 1
    torch.einsum("ii->i", y).mul_(3)  # eager: y's diagonal tripled
    return y                          # was: x * 1

Such an equation is traced as ``diagonal`` of the first two dimensions of each repeated letter (which puts that
letter last, as eager's ``diagonal`` does), once more for a letter named three times, then ``permute`` to the
output's order: the strides eager's view has. An equation that sums a letter (it is missing from the output, or
repeated and implicit: ``"ii"`` is the trace), or has several operands, makes new memory, and keeps Thunder's op.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides


def permutation_of(equation: str, ndim: int) -> tuple[int, ...] | None:
    """The dims order of a one-operand ``equation`` that only permutes (Note [an einsum that permutes is a view]):
    ``"ij->ji"`` -> ``(1, 0)``, implicit ``"ji"`` -> ``(1, 0)``; None for anything else."""
    steps = view_steps(equation, ndim)
    return steps[1] if steps is not None and not steps[0] else None


def view_steps(equation: str, ndim: int) -> tuple[list[tuple[int, int]], tuple[int, ...]] | None:
    """``(diagonals, order)`` for a one-operand ``equation`` whose result eager returns as a view of the operand
    (Notes [an einsum that permutes is a view], [an einsum that takes a diagonal is a view]): each ``(d1, d2)`` is a
    ``diagonal(0, d1, d2)`` taken in turn, then ``permute(order)``. None where the result is new memory, or the
    equation is not one this reads (eager then raises, or computes)::

        view_steps("ij->ji", 2) == ([], (1, 0))
        view_steps("iij->ji", 3) == ([(0, 1)], (0, 1))   # diagonal(0, 0, 1) has dims (j, i)
        view_steps("ij->i", 2) is None                    # j is summed
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "," in lhs:
        return None
    n_ellipsis = ndim - len(lhs.replace("...", "")) if "..." in lhs else 0
    lhs_labels = _labels(lhs, n_ellipsis)
    if lhs_labels is None or not lhs_labels or len(lhs_labels) != ndim or n_ellipsis < 0:
        return None
    if arrow:
        if "..." in rhs and "..." not in lhs:
            return None
        rhs_labels = _labels(rhs, n_ellipsis)
    else:  # (the implicit output: the ellipsis, then the letters named once, in alphabetical order)
        rhs_labels = [f"...{k}" for k in range(n_ellipsis)] + sorted(
            c for c in set(lhs_labels) if len(c) == 1 and lhs_labels.count(c) == 1)
    if rhs_labels is None or len(set(rhs_labels)) != len(rhs_labels) or set(rhs_labels) != set(lhs_labels):
        return None  # (a letter summed, or one the operand lacks)
    dims, diagonals = list(lhs_labels), []
    for label in dict.fromkeys(lhs_labels):
        while dims.count(label) > 1:
            d1 = dims.index(label)
            d2 = dims.index(label, d1 + 1)
            diagonals.append((d1, d2))
            dims = [x for k, x in enumerate(dims) if k != d1 and k != d2] + [label]
    return diagonals, tuple(dims.index(label) for label in rhs_labels)


def _labels(side: str, n_ellipsis: int) -> list[str] | None:
    """The labels of one side of an equation, the ellipsis as ``"...0"``, ``"...1"``, ...; None if malformed."""
    head, dots, tail = side.partition("...")
    if "." in head or "." in tail or not all(c.isalpha() and c.isascii() for c in head + tail):
        return None
    return list(head) + ([f"...{k}" for k in range(n_ellipsis)] if dots else []) + list(tail)


def _as_permute(previous):
    def traced(equation, *operands):
        ops = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
        if isinstance(equation, str) and len(ops) == 1 and isinstance(ops[0], TensorProxy):
            steps = view_steps(equation, ops[0].ndim)
            if steps is not None:
                view = ops[0]
                for d1, d2 in steps[0]:  # Note [an einsum that takes a diagonal is a view]
                    view = ltorch.diagonal(view, 0, d1, d2)
                return ltorch.permute(view, steps[1])
        return previous(equation, *operands)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Notes [an einsum that permutes is a view], [an einsum that takes a diagonal
    is a view]."""
    wrap_lookasides(executor, torch.einsum, _as_permute, with_symbol=True)
