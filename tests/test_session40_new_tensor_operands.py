"""Session 40 (helper): ``x.new_*(...)`` as the operand of an in-place op in a call that computes gradients.

In such a call Thunder 0.2.6 hands ``x.new_ones(3)`` (and ``new_zeros``, ``new_full``, ``new_empty``,
``new_tensor``) to the fusion pass as a leaf symbol of module ``thunder.torch``, not ``Tensor``; only the
latter was read as new memory, so ``x.mul_(x.new_ones(3))`` was refused as "an op whose result
fusion_alias cannot relate to its input", where eager runs it (fresh_results.py, Note [new_* in a call
that computes gradients]). Each program is checked against eager on fresh inputs: outputs, the written
arguments and the leaves' gradients, under every reference schedule, first and cached call
(grad_helpers.assert_matches_eager), and without gradients too.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]


def mul_new_ones(w):
    x = w * 2
    x.mul_(x.new_ones(3))
    return x


def add_new_zeros_then_read(w):
    x = w * 2
    x.add_(x.new_zeros(3))
    return x.sin()


def mul_new_full(w):
    x = w * 2
    x.mul_(x.new_full((3,), 2.0))
    return x


def mul_new_tensor(w):
    x = w * 2
    x.mul_(x.new_tensor([1.0, 2.0, 3.0]))
    return x


def copy_new_empty_filled(w):
    x = w * 2
    x.copy_(x.new_empty(3).fill_(2.0))
    return x * w


def view_mul_new_ones(w):
    x = w * 2
    x[0].mul_(x.new_ones(()) * 3)
    return x


def setitem_new_zeros(w):
    x = w * 2
    x[1:] = x.new_zeros(2)
    return x * w


def argument_add_new_ones(w, b):
    b.add_(b.new_ones(3))
    return w * b


PROGRAMS = [mul_new_ones, add_new_zeros_then_read, mul_new_full, mul_new_tensor, copy_new_empty_filled,
            view_mul_new_ones, setitem_new_zeros]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_with_gradients_matches_eager(fn):
    def make():
        w = torch.arange(1.0, 4.0).requires_grad_()
        return [w], (w,)

    assert_matches_eager(fn, make)


def test_written_argument_with_gradients_matches_eager():
    def make():
        w = torch.arange(1.0, 4.0).requires_grad_()
        return [w], (w, torch.arange(3.0))

    assert_matches_eager(argument_add_new_ones, make)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_without_gradients_matches_eager(fn, schedule):
    want = fn(torch.arange(1.0, 4.0))
    got = fusion_alias.jit(fn, schedule=schedule)(torch.arange(1.0, 4.0))
    torch.testing.assert_close(got, want)
