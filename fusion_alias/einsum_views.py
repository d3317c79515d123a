"""``torch.einsum`` of one operand that only reorders its dimensions, traced as the ``permute`` eager returns.

Note [an einsum that permutes is a view]
----------------------------------------
Eager's ``torch.einsum("ij->ji", x)`` (``"ijk->kij"``, the identity ``"ij->ij"``, the implicit ``"ji"``) returns a view of
``x`` with its dimensions permuted: ``y._base is x``, and a write through ``y`` writes ``x``. Thunder 0.2.6 hands
``einsum`` over whole, an op the alias analysis reads as "may alias its operand, cannot tell how" (aliasing.py, Note
[unknown ops alias conservatively]): correct without gradients, but in a call that computes gradients a read of
``x`` after a write through ``y`` was refused ("cannot express as views of one tensor")::

    y = torch.einsum("ij->ji", a)   # a = w * 1, w requires grad: y is a.t()
    y.mul_(2)                       # writes a
    return a.sum() + y.sum()        # was refused; eager: 4 * a.sum()

Such an equation, one operand whose letters each appear once on each side, no ellipsis, is traced here as
``permute`` with the order the output names, which every stage follows as the view it is. Any other equation (a
diagonal ``"ii->i"``, a sum, several operands) keeps Thunder's op.
"""

from __future__ import annotations

import torch
import thunder.torch as ltorch
from thunder.core.proxies import TensorProxy

from fusion_alias.wrapped_lookasides import wrap_lookasides


def permutation_of(equation: str, ndim: int) -> tuple[int, ...] | None:
    """The dims order of a one-operand ``equation`` that only permutes (Note [an einsum that permutes is a view]):
    ``"ij->ji"`` -> ``(1, 0)``, implicit ``"ji"`` -> ``(1, 0)``; None for anything else."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "." in eq or "," in lhs or not lhs.isalpha() or len(lhs) != ndim or len(set(lhs)) != len(lhs):
        return None
    if not arrow:
        rhs = "".join(sorted(lhs))  # (the implicit output: the letters in alphabetical order)
    if not (rhs.isalpha() or rhs == "") or sorted(rhs) != sorted(lhs):
        return None
    return tuple(lhs.index(c) for c in rhs)


def _as_permute(previous):
    def traced(equation, *operands):
        ops = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
        if isinstance(equation, str) and len(ops) == 1 and isinstance(ops[0], TensorProxy):
            perm = permutation_of(equation, ops[0].ndim)
            if perm is not None:
                return ltorch.permute(ops[0], perm)
        return previous(equation, *operands)

    return traced


def register(executor) -> None:
    """Lend ``executor`` the lookaside of Note [an einsum that permutes is a view]."""
    wrap_lookasides(executor, torch.einsum, _as_permute, with_symbol=True)
