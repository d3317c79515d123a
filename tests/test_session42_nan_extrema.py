"""Session 42 (helper-69): ``x.max()`` / ``x.min()`` (all elements) of a tensor holding NaN hand the gradient to the
NaN elements, shared, as eager's ``evenly_distribute_backward`` does (nan_extrema.py, Note [the gradient of max()
over a NaN]).

Found sweeping the neighbours of the session's ``0 * inf`` class (backward rules that differ from eager's at NaN
and infinities): Thunder traces them as ``amax``/``amin``, whose rule divides by the count of elements equal to
the result, zero for NaN: every element's gradient was NaN where eager's is 1 / (number of NaN) at the NaN and 0
elsewhere (plain ``thunder.jit`` too). ``x.amax()`` is NaN everywhere in eager too and stays. Checked against eager
on fresh inputs (values, written inputs, gradients with NaN compared as equal), on the reference schedules, first
and cached call, in programs that write in place and programs that do not.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_runs_like_eager

INF, NAN = float("inf"), float("nan")


def method_max(x):
    return x.max()


def method_min(x):
    return x.min() * 2


def function_max(x):
    return torch.max(x)


def function_min(x):
    return torch.min(x) + x.sum()


def max_of_2d(x):
    return x.view(2, 3).max()


def max_of_a_written(x):
    x.add_(1)
    return x.min(), x.max()


def amax_unchanged(x):
    return x.amax()


def max_along_a_dim(x):  # (indices: eager's and Thunder's alike already)
    return x.view(2, 3).max(1).values


PROGRAMS = [method_max, method_min, function_max, function_min, max_of_2d, max_of_a_written,
            amax_unchanged, max_along_a_dim]

VALUES = {
    "one_nan": [NAN, 1.0, 2.0, 0.0, -1.0, 2.0],
    "two_nans": [NAN, 1.0, NAN, 0.0, -INF, 2.0],
    "all_nan": [NAN] * 6,
    "infinities": [INF, 1.0, INF, -INF, 0.0, -INF],
    "ties": [2.0, 1.0, 2.0, 0.0, 0.0, -1.0],
}


def _run(fn, values):
    leaf = torch.tensor(values, requires_grad=True)
    x = leaf * 1
    outs = fn(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    sum(((o * (torch.arange(o.numel()) + 1).reshape(o.shape)).sum() for o in outs)).backward()
    return [o.detach().clone() for o in outs], x.detach().clone(), leaf.grad


@pytest.mark.parametrize("values", sorted(VALUES))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, values):
    assert_runs_like_eager(fn, _run, VALUES[values])


def max_then_write(x):
    m = x.max()
    x.mul_(2)
    return m, x


def min_then_write(x):
    m = torch.min(x)
    x.mul_(2)
    return m, x


@pytest.mark.parametrize("fn", [max_then_write, min_then_write], ids=lambda f: f.__name__)
def test_a_write_after_it_is_refused_as_eager_raises(fn):
    """``max`` saves ``x``; eager's backward raises after ``x.mul_(2)``: refused when traced, as before."""
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(fn, VALUES["one_nan"])
    with pytest.raises(fusion_alias.AliasInputError, match="saves"):
        _run(fusion_alias.jit(fn, backend="reference"), VALUES["one_nan"])


def test_without_grad_the_trace_is_thunders():
    jitted = fusion_alias.jit(method_max, backend="reference")
    x = torch.tensor(VALUES["one_nan"])
    assert torch.isnan(jitted(x))
    assert "isnan" not in str(fusion_alias.explain(jitted))
