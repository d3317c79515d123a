"""Session 43: ``x.ravel()`` is traced as eager defines it, ``x.contiguous().view(-1)`` (ravel_spelling.py, Note [ravel
is contiguous, then a view]). With gradients a read after a write through it was refused ("cannot express as views of
one tensor"); without, it ran as one opaque op. Checked against eager on fresh inputs, with and without gradients:
outputs, the input after the call, leaf gradients, every reference schedule, first and cached call, and one jitted
function called with layouts that make ``ravel`` a view, then a copy, then a view again.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager


def write_through(a):
    r = a.ravel()
    r.mul_(2)
    return a.sum() + r.sum(), r


def write_through_a_transpose(a):  # a copy: a keeps its values
    r = a.t().ravel()
    r.mul_(2)
    return a.sum() + r.sum(), r


def of_a_column(a):  # (4, 1) with strides (4, 1): contiguous, a view
    r = torch.ravel(a[:, :1])
    r.mul_(2)
    return a * 1, r


def of_a_strided_row_block(a):  # rows 0 and 2: not contiguous, a copy
    r = a[::2].ravel()
    r.mul_(2)
    return a * 1, r


def read_after_a_write(a):
    r = a[0].ravel()
    a.add_(1)
    return r * 1, a.ravel()


PROGRAMS = [write_through, write_through_a_transpose, of_a_column, of_a_strided_row_block, read_after_a_write]


def _input():
    leaf = (torch.arange(16.0).reshape(4, 4) / 8 - 1).requires_grad_()
    return [leaf], [leaf * 1]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_with_gradients_matches_eager(fn):
    assert_matches_eager(fn, _input)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_without_gradients_matches_eager(fn):
    assert_matches_eager(fn, lambda: ([], [torch.arange(16.0).reshape(4, 4) / 8 - 1]))


@pytest.mark.parametrize("grad", [False, True])
def test_layouts_change_between_calls(grad):
    def f(a):
        r = a.ravel()
        r.mul_(2)
        return a * 1, r

    jitted = fusion_alias.jit(f, backend="reference")
    for layout in (lambda x: x, lambda x: x.t(), lambda x: x, lambda x: x[:, :1], lambda x: x[:1].t()):
        results = []
        for fn in (f, jitted):
            x = layout((torch.arange(16.0).reshape(4, 4)).requires_grad_(grad) * 1)
            results.append([o.detach() for o in fn(x)] + [x.detach()])
        for got, want in zip(results[1], results[0]):
            torch.testing.assert_close(got, want)
