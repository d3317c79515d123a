"""Calls that compute gradients, session 28's fuzz findings: each matches eager (values, mutated inputs,
leaf gradients), or raises where eager raises.

F: a 0-d operand that a composite computes with first (``alpha=``, ``value=``) crashed in backward
   (zero_dim_operands.py, Note [a 0-d operand a composite computes with first, left 0-d]).
D, E: in-place logical ops and ``out=`` of functions without a gradient are writes eager's autograd does
   not record (gradient_operands.py, Note [writes eager's autograd does not record]).
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias
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


def _written(op):
    def fn(a):
        b = a * 1
        op(b)
        return b

    return fn


def _written_then_read(op):
    def fn(a):
        b = a * 1
        op(b)
        return b * a

    return fn


# Bugs D and E: writes eager's autograd does not record (the tensor keeps its history, takes the values)
UNRECORDED = {
    "logical_xor_": lambda b: b.logical_xor_(b > 0),
    "logical_and_": lambda b: b.logical_and_(b > 0.5),
    "logical_or_": lambda b: b.logical_or_(b * 0),
    "logical_not_": lambda b: b.logical_not_(),
    "logical_not_ of a view": lambda b: b[0].logical_not_(),
    "eq out=b": lambda b: torch.eq(b, 0.5, out=b),
    "gt out=b of another value": lambda b: torch.gt(b * 2, 1, out=b),
    "logical_xor out=b": lambda b: torch.logical_xor(b, b > 0.5, out=b),
    "logical_not out=b": lambda b: torch.logical_not(b, out=b),
    "eq out= a view": lambda b: torch.eq(b[0], 0.5, out=b[0]),
    "logical_xor_, then exp_": lambda b: b.logical_xor_(b > 0.5).exp_(),
}


@pytest.mark.parametrize("name", list(UNRECORDED))
@pytest.mark.parametrize("wrap", [_written, _written_then_read], ids=["returned", "read"])
def test_write_eager_does_not_record_keeps_the_history(name, wrap):
    assert_matches_eager(wrap(UNRECORDED[name]), _fresh(M))


def test_recorded_comparison_in_place_beside_them():
    # eq_ has a derivative in eager (zeros): the values written read with that history. (Returned alone, the
    # leaf's .grad is None where eager's is zeros: docs/limits.md, the known None-for-zeros gap.)
    assert_matches_eager(_written_then_read(lambda b: b.eq_(0.5)), _fresh(M))


@pytest.mark.parametrize("fn", [
    lambda a: a.logical_not_() * 2,
    lambda a: torch.eq(a, 0.5, out=a) * 2,
], ids=["logical_not_", "eq out="])
def test_unrecorded_write_into_an_input(fn):
    assert_matches_eager(fn, _fresh(M))  # a non-leaf input: written back, its history kept

    def leaf_input():  # eager runs these on a leaf that requires grad too
        ws = _leaves(M)
        return ws, ws

    assert_matches_eager(fn, leaf_input)


def test_out_of_a_function_without_gradient_into_a_buffer_without_grad():
    def fn(a, o):
        torch.eq(a * 1, 0.5, out=o)
        return o * a

    def make():
        ws = _leaves(M)
        return ws, [ws[0] * 1, torch.zeros(M)]

    assert_matches_eager(fn, make)


@pytest.mark.parametrize("fn", [
    lambda b: torch.heaviside(b, torch.full(M, 0.5), out=b),  # eager: "derivative for aten::heaviside is not
    lambda b: torch.floor_divide(b, 0.3, out=b),              # implemented" at backward
    lambda b: torch.add(b, 1, out=b),                         # eager: refused at the call
])
def test_out_of_other_functions_that_require_grad_stays_refused(fn):
    def step(f, a):
        b = a * 1
        f(b)
        (b * a).sum().backward()

    with pytest.raises(RuntimeError):
        step(fn, _leaves(M)[0])
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        step(fusion_alias.jit(fn, backend="reference"), _leaves(M)[0])
