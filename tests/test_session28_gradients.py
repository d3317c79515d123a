"""Calls that compute gradients, session 28's fuzz findings: each matches eager (values, mutated inputs,
leaf gradients), or raises where eager raises.

F: a 0-d operand that a composite computes with first (``alpha=``, ``value=``) crashed in backward
   (zero_dim_operands.py, Note [a 0-d operand a composite computes with first, left 0-d]).
"""

from __future__ import annotations

import pytest
import torch

from tests.grad_helpers import assert_matches_eager


def _leaves(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(s, generator=g) + 0.5).requires_grad_(True) for s in shapes]


def _fresh(*shapes):
    """A factory of (leaves, the call's arguments: non-leaf copies of the leaves)."""

    def make():
        ws = _leaves(*shapes)
        return ws, [w * 1 for w in ws]

    return make


M, S = (3, 4), ()

# Bug F: a 0-d tensor operand beside a (3, 4) one, computed with first inside the composite
ZERO_DIM_CASES = {
    "add_ alpha": (lambda a, s: a.add_(s, alpha=0.5), [M, S]),
    "sub_ alpha": (lambda a, s: a.sub_(s, alpha=2), [M, S]),
    "add_ alpha of an op on s": (lambda a, s: a.add_(s * 2, alpha=0.5), [M, S]),
    "add_ alpha, s read again": (lambda a, s: a.add_(s, alpha=0.5) * s, [M, S]),
    "addcmul_ value, 0-d first": (lambda a, s, c: a.addcmul_(s, c, value=2), [M, S, M]),
    "addcmul_ value, 0-d second": (lambda a, c, s: a.addcmul_(c, s, value=2), [M, M, S]),
    "addcmul_ value, both 0-d": (lambda a, s, t: a.addcmul_(s, t, value=2), [M, S, S]),
    "addcdiv_ value, 0-d numerator": (lambda a, s, c: a.addcdiv_(s, c, value=2), [M, S, M]),
    "addcdiv_ value, 0-d denominator": (lambda a, s, c: a.addcdiv_(c, s, value=0.5), [M, S, M]),
    "add alpha, then exp_": (lambda a, s: torch.add(a, s, alpha=0.5).exp_(), [M, S]),
    "exp_, then add alpha": (lambda a, s: torch.add(a.exp_(), s, alpha=0.5), [M, S]),
    "addcmul value, then exp_": (lambda a, s, c: torch.addcmul(a, s, c, value=2).exp_(), [M, S, M]),
}


@pytest.mark.parametrize("name", list(ZERO_DIM_CASES))
def test_zero_dim_operand_a_composite_computes_with_first(name):
    fn, shapes = ZERO_DIM_CASES[name]
    assert_matches_eager(fn, _fresh(*shapes))


def test_zero_dim_intermediate_with_alpha_and_a_second_use():
    # the fuzz seed 1 #10 shape (a 0-d intermediate also sent on through a reshape), with alpha
    def fn(h0, h1):
        t1 = torch.sigmoid(h0[1, 2])
        h1[3].add_(t1, alpha=3)
        return h1, t1.reshape(1)

    assert_matches_eager(fn, _fresh((4, 4), (4, 4)))

