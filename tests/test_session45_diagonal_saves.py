"""Session 45 (helper-73): a write through ``diagonal()`` into a tensor an op saved for the backward (``t0 = a.tanh();
t0.diagonal(-1).add_(0.5); return t0``) returned a gradient where eager raises at backward: Thunder's ``diagonal`` is a
gather in the trace the refusals read, so the write landed in no memory of ``t0``'s (gather_views.py). The
saved-version check takes a diagonal's result as its input's memory now (saved_versions.py). Found by fuzz ``train
--grad --strict-backward`` seed 42013 #15, #16 (plain ``thunder.jit`` returns the gradient too). The 6 tests of
``RAISES`` fail on 726e944 (checked); the 3 of ``RUNS`` pass there too.
"""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def tanh_then_write_its_diagonal(a):  # (42013 #15, reduced)
    t0 = a.tanh()
    t0.diagonal(-1).add_(0.5)
    return t0, t0.exp()


def exp_then_write_its_main_diagonal(a):
    t0 = a.exp()
    t0.diagonal().mul_(2)
    return t0 * 1


def sin_then_write_the_input_diagonal(a):
    t0 = a.sin()  # saves a
    a.diagonal(1).zero_()
    return t0


def mul_then_write_its_diagonal(a):  # (mul by a number saves nothing)
    t0 = a * 2
    t0.diagonal().add_(1)
    return t0


def tanh_then_read_its_diagonal(a):
    t0 = a.tanh()
    return t0.diagonal() * 3


def tanh_of_a_written_diagonal(a):
    a.diagonal().add_(1)
    return a.tanh()


RAISES = [tanh_then_write_its_diagonal, exp_then_write_its_main_diagonal, sin_then_write_the_input_diagonal]
RUNS = [mul_then_write_its_diagonal, tanh_then_read_its_diagonal, tanh_of_a_written_diagonal]


def _run(fn):
    torch.manual_seed(0)
    leaf = torch.randn(4, 4, requires_grad=True)
    out = fn(leaf * 1)
    out = out if isinstance(out, tuple) else (out,)
    sum((o * (k + 1)).sum() for k, o in enumerate(out)).backward()
    return [o.detach() for o in out], leaf.grad


@pytest.mark.parametrize("schedule", SCHEDULES[:2])
@pytest.mark.parametrize("fn", RAISES)
def test_a_write_through_a_diagonal_into_a_saved_tensor_is_refused(fn, schedule):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(fn)
    with pytest.raises(Exception, match="saves .* for the backward"):
        _run(fusion_alias.jit(fn, backend="reference", schedule=schedule))


@pytest.mark.parametrize("fn", RUNS)
def test_what_eager_runs_runs(fn):
    want_out, want_grad = _run(fn)
    got_out, got_grad = _run(fusion_alias.jit(fn, backend="reference"))
    for g, w in zip(got_out, want_out):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_grad, want_grad)
