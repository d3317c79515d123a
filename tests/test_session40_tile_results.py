"""Session 40 (helper): ``x.tile(reps)`` is new memory, with gradients too (fresh_results.py).

In a call that computes gradients Thunder 0.2.6 hands ``tile`` to the fusion pass whole, a leaf symbol the
alias analysis read as "may alias its argument, cannot tell": ``y = x.tile((1, 1)); x.add_(1); return y``
was refused as memory the functional rewrite cannot follow, where eager runs it (``tile`` is a ``repeat``:
it always copies, tests/test_units.py checks it on eager tensors). Checked against eager on fresh inputs:
outputs, written arguments, gradients; every reference schedule, first and cached call; and without
gradients.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]


def tile_then_write(w):
    x = w * 1
    y = x.tile((1, 1))
    x.add_(1)
    return y * 1, x


def tile_written(w):
    x = w * 1
    y = torch.tile(x, (2,))
    y.mul_(2)
    return x * 1, y


def tile_3d_written_under_no_grad(w):
    x = w * 1
    y = x.tile((2, 1, 1))
    with torch.no_grad():
        y[0].zero_()
    return y * w, x


def tile_of_written_argument(w, b):
    y = b.tile((1, 2))
    b.add_(1)
    return y * w[0, 0], b


PROGRAMS = [tile_then_write, tile_written, tile_3d_written_under_no_grad]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_with_gradients_matches_eager(fn):
    def make():
        w = torch.arange(6.0).reshape(2, 3).requires_grad_()
        return [w], (w,)

    assert_matches_eager(fn, make)


def test_written_argument_with_gradients_matches_eager():
    def make():
        w = torch.arange(6.0).reshape(2, 3).requires_grad_()
        return [w], (w, torch.arange(4.0).reshape(2, 2))

    assert_matches_eager(tile_of_written_argument, make)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_without_gradients_matches_eager(fn, schedule):
    want = fn(torch.arange(6.0).reshape(2, 3))
    got = fusion_alias.jit(fn, schedule=schedule)(torch.arange(6.0).reshape(2, 3))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
