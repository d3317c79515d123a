"""Session 43: ``torch.einsum`` of one operand that only permutes is traced as the view eager returns (einsum_views.py,
Note [an einsum that permutes is a view]). With gradients a read after a write through one was refused ("cannot express
as views of one tensor"). Checked against eager on fresh inputs, with and without gradients, every reference schedule,
first and cached call; equations that do more than permute keep Thunder's op.
"""

import pytest
import torch

from fusion_alias.einsum_views import permutation_of
from tests.grad_helpers import assert_matches_eager


def transpose_written(a):
    y = torch.einsum("ij->ji", a)
    y.mul_(2)
    return a.sum() + y.sum(), y


def identity_then_write(a):
    y = torch.einsum("ij", a)
    a.add_(1)
    return y * 1, a


def implicit_transpose_row_zeroed(a):
    y = torch.einsum("ji", a)
    y[0].zero_()
    return a * 1, y


def spaced_equation(a):
    y = torch.einsum("i j -> j i", a)
    y.mul_(2)
    return a * 1


def a_sum_then_write(a):  # not a permutation: Thunder's einsum
    y = torch.einsum("ij->i", a)
    a.mul_(2)
    return y, a


def two_operands(a):
    return torch.einsum("ij,jk->ik", a, a.t())


PROGRAMS = [transpose_written, identity_then_write, implicit_transpose_row_zeroed, spaced_equation, a_sum_then_write,
            two_operands]


@pytest.mark.parametrize("grad", [False, True], ids=["values", "gradients"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, grad):
    def make():
        leaf = (torch.arange(12.0).reshape(3, 4) / 5).requires_grad_(grad)
        return ([leaf] if grad else []), [leaf * 1]

    assert_matches_eager(fn, make)


@pytest.mark.parametrize("equation, ndim, want", [
    ("ij->ji", 2, (1, 0)), ("ji", 2, (1, 0)), ("ij", 2, (0, 1)), ("ijk->kij", 3, (2, 0, 1)), (" i j->j i ", 2, (1, 0)),
    ("ij->i", 2, None), ("ij,jk->ik", 2, None), ("...j->j...", 2, (1, 0)), ("ij->ji", 3, None),
    ("ij->jk", 2, None),
])
def test_permutation_of(equation, ndim, want):
    assert permutation_of(equation, ndim) == want
