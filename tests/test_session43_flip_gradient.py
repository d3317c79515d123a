"""Session 43: ``flip`` has a gradient (flip_gradient.py, Note [flip's gradient]); Thunder 0.2.6 raised "Failed to
find a gradient transform for bound symbol ... prims.flip" in every call that computes gradients through it (plain
``thunder.jit`` too; fuzz seed 70020 #5, ``fresh --grad``). Checked against eager on fresh inputs: outputs, mutated
inputs and leaf gradients, every reference schedule, first and cached call.
"""

import pytest
import torch

from tests.grad_helpers import assert_matches_eager


def ratio(x):
    return x / x.flip(0)


def maximum_of_reversed(x):
    return torch.maximum(x, x.flip(0)) * x.flip((0, 1))


def flip_after_write(x):
    x.mul_(2)
    return x.flip(1).exp(), x


def fuzz_70020_5(a, b):  # b = a[0]: the read of b.flip(0) after a write of a
    t0 = -torch.zeros_like(a).add(a)
    a.add_(a.trace(), alpha=0.5)
    b.add_(torch.slice_scatter(b, b.flip(0)[:1], 0, 0, 1), alpha=0.5)
    t0.fill_(0.75)
    return t0, a


def _one(shape):
    def make():
        leaf = (torch.arange(1.0, 1.0 + torch.Size(shape).numel()).reshape(shape) / 7).requires_grad_()
        return [leaf], [leaf * 1]
    return make


def _aliased():
    leaf = (torch.arange(1.0, 25.0).reshape(4, 6) / 7).requires_grad_()
    a = leaf * 1
    return [leaf], [a, a[0]]


@pytest.mark.parametrize("fn", [ratio, maximum_of_reversed, flip_after_write], ids=lambda f: f.__name__)
def test_matches_eager(fn):
    assert_matches_eager(fn, _one((4, 3)))


def test_the_fuzz_program_matches_eager():
    assert_matches_eager(fuzz_70020_5, _aliased)
