"""Writes through ``diagonal()`` in a call that computes gradients (gather_views.py, Note [a diagonal is a view the
rewrite replays by its own function]). Refused before session 42 ("t0 is read after a write into memory it shares
with another tensor in a way fusion_alias cannot express as views of one tensor"): the train fuzz generator's most
frequent refusal with ``--grad`` (18 of 150 programs, seed 42005).
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager, assert_matches_eager_with_flags


def _square():
    w = (torch.arange(16.0).view(4, 4) / 10).requires_grad_()
    v = (torch.arange(4.0) / 3).requires_grad_()
    return [w, v], [w * 1, v * 1]


def _transposed():
    w = (torch.arange(20.0).view(4, 5) / 10).requires_grad_()
    v = (torch.arange(4.0) / 3).requires_grad_()
    return [w, v], [(w * 1).t(), v * 1]


def jitter_then_read(a, v):
    t0 = a + 0.5
    t0.diagonal().add_(0.25)
    return t0 * 2


def scaled_by_a_tensor_that_requires_grad(a, v):
    t0 = a + 0.5
    t0.diagonal().mul_(v[:4] if t0.shape[0] >= 4 else v[: t0.shape[0]])
    return t0.sum(0)


def diagonal_taken_then_its_base_written(a, v):
    t0 = a + 0.5
    d = t0.diagonal()
    t0.mul_(v[0])
    return d.exp()


def offset_diagonal(a, v):
    t0 = a + 0.5
    t0.diagonal(1).add_(v[:3])
    return t0.tanh()


def negative_offset_dims_swapped(a, v):
    t0 = a + 0.5
    t0.diagonal(-1, 1, 0).sub_(v[1:4])
    return t0 * 1


def input_diagonal_written(a, v):
    a.diagonal().add_(v[: min(a.shape)])
    return a * 3


def slice_of_the_diagonal_written(a, v):
    t0 = a + 0.5
    t0.diagonal()[1:3].zero_()
    return t0 * v[0]


def no_grad_write_of_the_diagonal(a, v):
    t0 = a + 0.5
    with torch.no_grad():
        t0.diagonal().fill_(1.0)
    return t0 * v[0]


def detached_diagonal_written(a, v):
    t0 = a + 0.5
    t0.detach().diagonal().add_(1.0)
    return t0 * v[0]


@pytest.mark.parametrize("make", [_square, _transposed], ids=["square", "transposed"])
@pytest.mark.parametrize("fn", [jitter_then_read, scaled_by_a_tensor_that_requires_grad,
                                diagonal_taken_then_its_base_written, offset_diagonal, negative_offset_dims_swapped,
                                input_diagonal_written, slice_of_the_diagonal_written, no_grad_write_of_the_diagonal,
                                detached_diagonal_written])
def test_a_write_through_a_diagonal_matches_eager(fn, make):
    assert_matches_eager_with_flags(fn, make)


def test_a_diagonal_of_three_dims_matches_eager():
    def fn(a, v):
        t0 = (a + 0.5).reshape(2, 2, 4)
        t0.diagonal(0, 0, 1).add_(1.0)
        return t0 * 2

    assert_matches_eager(fn, _square)


def test_a_returned_diagonal_of_a_returned_tensor_stays_refused():
    # refusals/returned_diagonals.py: Thunder's autodiff returns the diagonal as a copy
    def fn(a, v):
        t0 = a + 0.5
        t0.diagonal().add_(v)
        return t0, t0.diagonal()

    with pytest.raises(fusion_alias.AliasInputError, match="is a diagonal\\(\\) of memory another output holds"):
        fusion_alias.jit(fn)(*_square()[1])
