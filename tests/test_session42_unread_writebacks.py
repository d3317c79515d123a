"""Session 42 (helper-69): a written input whose new value the loss does not read gets eager's gradient, not the
zero cotangent Thunder's one backward node multiplies by the write's partials (unreached_writebacks.py, Note [a
write-back the loss does not read]; zero_cotangents.py, Note [a backward without the unread cotangents]).

Fuzz ``--special-values --grad`` seed 20962 #23: ``b.mul_(b.detach())`` of ``b`` holding inf, the loss reading
other outputs only: eager's leaf behind ``b`` kept ``grad`` None, ours was NaN there (``0 * inf``). A gradient
computed both from read outputs and from the unread write was NaN where eager's is finite (``t0 = b * 2;
b.mul_(b.detach()); return t0``). Checked against eager on fresh inputs with infinities and NaN among them (values,
written inputs, gradients with NaN compared as equal, eager's None as zeros), on the reference schedules, first
and cached call; and that a write the loss does read still gets its gradient.
"""

import pytest
import torch

import fusion_alias
from tests.nan_gradient_checks import run_with_random_loss
from tests.grad_helpers import assert_runs_like_eager, assert_same_nested

INF, NAN = float("inf"), float("nan")


def unread_only(a, b):  # seed 20962 #23 in brief
    b.mul_(b.detach())
    return a.sin()


def unread_and_read(a, b):
    t0 = b * 2
    b.mul_(b.detach())
    return t0


def unread_exp(a, b):
    b.exp_()
    return a * 2


def unread_written_from_a(a, b):
    b.mul_(a)
    return a.sin()


def unread_after_a_read(a, b):
    t0 = b.exp()
    b.mul_(3.0)
    return t0


def unread_draw(a, b):  # seed 20962 #22: the draw's zero gradient is NaN behind exp's overflow, eager's too
    t0 = torch.bernoulli(torch.sigmoid(b.exp()))
    b.add_(b.cummax(-1)[0])
    return t0


def unread_where(a, b):
    b.copy_(torch.where(b > 0, b * b, a))
    return a.tanh()


def read_write(a, b):  # (the loss reads the write: Thunder's backward as it was)
    b.mul_(b.detach())
    return b * 1, a.sin()


def read_written_itself(a, b):
    b.exp_()
    return b


PROGRAMS = [unread_only, unread_and_read, unread_exp, unread_written_from_a, unread_after_a_read, unread_draw,
            unread_where, read_write, read_written_itself]

VALUES = {
    "finite": ([0.5, -1.0, 2.0, 0.25], [1.5, 0.5, -2.0, 3.0]),
    "infinities": ([0.5, -INF, 2.0, 0.0], [INF, 0.5, -INF, 3.0]),
    "nan": ([NAN, -1.0, 2.0, 0.25], [1.5, NAN, 1e5, 0.0]),
}


def _inputs(values, view=False):
    xs, ys = values

    def make():
        la = torch.tensor(xs, requires_grad=True)
        lb = torch.tensor(ys, requires_grad=True)
        if view:  # b a view of the memory a is read from too
            base = torch.stack([la, lb]) * 1
            return [la, lb], [base[0], base[1]]
        return [la, lb], [la * 1, lb * 1]

    return make


_run = run_with_random_loss  # (tests/nan_gradient_checks.py)


def _assert_same(got, want, where=""):
    """As ``assert_same_nested``, but a gradient of zeros stands for eager's None (unreached_writebacks.py's
    module Note)."""
    assert_same_nested(got[:2] + got[3:], want[:2] + want[3:], where)
    for g, w in zip(got[2], want[2]):
        if w is None:
            assert g is None or not bool(g.ne(0).any()), (where, g)
        else:
            torch.testing.assert_close(g, w, equal_nan=True)


@pytest.mark.parametrize("view", [False, True], ids=["apart", "one_memory"])
@pytest.mark.parametrize("values", sorted(VALUES))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, values, view):
    make = _inputs(VALUES[values], view)
    try:
        _run(fn, make)
    except RuntimeError as e:  # (eager's own refusal, e.g. a saved tensor written: not this test's class)
        pytest.skip(f"eager raises: {e}")
    assert_runs_like_eager(fn, _run, make, compare=_assert_same)


def test_an_unread_write_leaves_the_leaf_without_nan():
    """seed 20962 #23: eager's x1.grad stays None; it was [nan, 0, 0, 0], it is zeros."""
    make = _inputs(([0.5, -1.0, 2.0, 0.0], [INF, 0.5, -INF, 3.0]))
    got = _run(fusion_alias.jit(unread_only, backend="reference"), make)
    assert got[2][1] is None or not bool(got[2][1].ne(0).any())
    assert torch.isfinite(got[2][0]).all()


def test_the_unread_part_is_dropped_not_the_read_one():
    make = _inputs(VALUES["infinities"])
    got = _run(fusion_alias.jit(unread_and_read, backend="reference"), make)
    assert torch.isfinite(got[2][1]).all() and bool((got[2][1] > 0).all())
