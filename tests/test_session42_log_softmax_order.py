"""Session 42 (helper-69): ``log_softmax`` of a row holding +inf is NaN, as eager's (log_softmax_order.py, Note
[log_softmax of a row holding +inf]).

Found sweeping the neighbours of the session's ``0 * inf`` class: a fusion region computed Thunder's decomposition
``x - logsumexp(x)``, whose ``logsumexp`` takes an infinite maximum as 0, and returned ``[nan, -inf, -inf]`` for
``[inf, 1, 0]`` where eager (and plain ``thunder.jit``, which runs torch's kernel) returns NaN for the whole row.
Checked against eager on fresh inputs (values with NaN compared as equal, written inputs, gradients), reference
schedules, first and cached call; and a write into the result is still refused as eager's backward raises.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_runs_like_eager

INF, NAN = float("inf"), float("nan")


def method(x):
    return x.log_softmax(0)


def functional(x):
    return torch.nn.functional.log_softmax(x.view(2, 3), dim=1)


def torch_function(x):
    return torch.log_softmax(x.view(3, 2), -1) * 2


def with_dtype(x):
    return x.log_softmax(0, dtype=torch.float64)


def after_a_write(x):
    x.mul_(2)
    return x.view(2, 3).log_softmax(1), x


def then_a_write(x):  # (log_softmax saves its result, not x: eager runs)
    y = x.log_softmax(0)
    x.add_(1)
    return y, x


PROGRAMS = [method, functional, torch_function, with_dtype, after_a_write, then_a_write]
VALUES = {
    "plus_inf": [INF, 1.0, 0.0, -1.0, 2.0, 0.5],
    "two_plus_inf": [INF, INF, 0.0, 1.0, -INF, 0.5],
    "minus_inf": [-INF, -INF, 0.0, 1.0, -INF, 0.5],
    "nan": [NAN, 1.0, 0.0, 1.0, 2.0, 0.5],
    "finite": [0.3, 1.0, -2.0, 0.0, 2.5, -0.5],
}


def _run(fn, values):
    leaf = torch.tensor(values, requires_grad=True)
    x = leaf * 1
    outs = fn(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    sum(((o.double() * (torch.arange(o.numel()) + 1).reshape(o.shape)).sum() for o in outs)).backward()
    return [o.detach() for o in outs], x.detach(), leaf.grad


@pytest.mark.parametrize("values", sorted(VALUES))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, values):
    assert_runs_like_eager(fn, _run, VALUES[values])


def test_without_grad():
    x = torch.tensor(VALUES["plus_inf"])
    got = fusion_alias.jit(method, backend="reference")(x)
    assert bool(got.isnan().all())


def test_a_write_into_the_result_is_refused_as_eager_raises():
    def prog(x):
        y = x.log_softmax(0)
        y.add_(1)
        return y

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(prog, VALUES["finite"])
    with pytest.raises(fusion_alias.AliasInputError, match="saves"):
        _run(fusion_alias.jit(prog, backend="reference"), VALUES["finite"])
