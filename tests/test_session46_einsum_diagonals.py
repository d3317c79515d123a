"""Session 46: ``torch.einsum`` of one operand that takes a diagonal (``"ii->i"``, ``"iij->ji"``, ``"...ii->...i"``) is
the view eager returns (einsum_views.py, Note [an einsum that takes a diagonal is a view]). Thunder decomposes it into
``where(eye, x, 0).sum(1)``, new memory: a write through it was lost, silently, with and without gradients. Checked
against eager on fresh inputs (values, the mutated inputs, gradients), every reference schedule, first and cached
call; the equations' steps against eager's own view (values, strides, offset).
"""

import pytest
import torch

from fusion_alias.einsum_views import view_steps
from tests.grad_helpers import assert_matches_eager


def diagonal_tripled(a):
    y = a * 1
    torch.einsum("ii->i", y).mul_(3)
    return y


def diagonal_of_input_written(a):
    torch.einsum("ii->i", a).add_(1)
    return a * 2


def batched_diagonal_zeroed_then_read(a):
    d = torch.einsum("...ii->...i", a)
    s = a.sum()
    d.zero_()
    return s, a.exp()


def diagonal_and_permute(a):
    y = a * 1
    v = torch.einsum("iij->ji", y)
    v[0].mul_(-1)
    return y.sum(1), v * 1


def diagonal_read_after_base_written(a):
    d = torch.einsum("ii->i", a)
    a.mul_(2)
    return d * 1


def trace_is_a_sum(a):  # "ii": the trace, new memory (Thunder's op)
    t = torch.einsum("ii", a)
    a.add_(1)
    return t, a * 1


SQUARE = [diagonal_tripled, diagonal_of_input_written, diagonal_read_after_base_written, trace_is_a_sum]
CUBE = [batched_diagonal_zeroed_then_read, diagonal_and_permute]


@pytest.mark.parametrize("grad", [False, True], ids=["values", "gradients"])
@pytest.mark.parametrize("fn", SQUARE + CUBE, ids=lambda f: f.__name__)
def test_matches_eager(fn, grad):
    shape = (3, 3) if fn in SQUARE else (3, 3, 3)

    def make():
        leaf = (torch.arange(float(torch.Size(shape).numel())).reshape(shape) / 7 - 1).requires_grad_(grad)
        return ([leaf] if grad else []), [leaf * 1]

    assert_matches_eager(fn, make)


@pytest.mark.parametrize("equation, shape", [
    ("ii->i", (3, 3)), ("iij->ji", (3, 3, 4)), ("iij->ij", (3, 3, 4)), ("...ii->...i", (2, 3, 3)),
    ("i...i->...i", (3, 2, 3)), ("iii->i", (3, 3, 3)), ("iIi->Ii", (3, 2, 3)), ("ijji->ji", (2, 3, 3, 2)),
    ("ijij->ij", (2, 3, 2, 3)), ("a...a->a...", (2, 3, 4, 2)), ("...j->j...", (3, 4)), ("ij->ji", (3, 4)),
])
def test_steps_give_eagers_view(equation, shape):
    x = torch.randn(*shape)
    want = torch.einsum(equation, x)
    assert want._base is x
    diagonals, order = view_steps(equation, x.ndim)
    got = x
    for d1, d2 in diagonals:
        got = torch.diagonal(got, 0, d1, d2)
    got = got.permute(order)
    assert torch.equal(got, want)
    assert (got.stride(), got.storage_offset()) == (want.stride(), want.storage_offset())


@pytest.mark.parametrize("equation, ndim", [
    ("ii", 2), ("ij->i", 2), ("jiij", 4), ("ii->", 2), ("ij,jk->ik", 2), ("ij->jk", 2), ("ij->ji", 3), ("", 0),
    ("i..j", 2), ("ii->ii", 2),
])
def test_new_memory_or_unread_equations_keep_thunders_op(equation, ndim):
    assert view_steps(equation, ndim) is None
