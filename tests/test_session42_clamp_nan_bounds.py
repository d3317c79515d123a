"""Session 42 (helper-69): ``clamp`` with a NaN in a tensor bound passes the gradient to neither the element nor the
bound there, as eager does (clamp_ties.py, Note [a NaN bound: no gradient]).

Fuzz ties ``--special-values --grad`` seed 50020 #44: ``torch.clamp(b, max=a)`` with NaN in ``a``, then
``.abs().pow(0.5)``: the ``where`` chose the bound, which took the (NaN) gradient where eager's is 0. Checked against
eager on fresh inputs (values with NaN equal, gradients), reference schedules, first and cached call.
"""

import pytest
import torch

from tests.grad_helpers import assert_runs_like_eager

NAN, INF = float("nan"), float("inf")


def clamp_max(x, m):
    return torch.clamp(x, max=m)


def clamp_min(x, m):
    return torch.clamp(x, min=m)


def clamp_both(x, m):
    return x.clamp(m, m + 1)


def clamp_then_sqrt(x, m):  # seed 50020 #44's shape
    return torch.clamp(x, max=m).abs().pow(0.5)


def clamp_in_place(x, m):
    x.clamp_(max=m)
    return x * 2


def clip_broadcast(x, m):
    return x.view(2, 2).clip(max=m[:2])


PROGRAMS = [clamp_max, clamp_min, clamp_both, clamp_then_sqrt, clamp_in_place, clip_broadcast]
X = [1.0, NAN, INF, 0.5]
BOUNDS = {"nan": [NAN, 1.0, NAN, 0.5], "all_nan": [NAN] * 4, "finite": [0.5, 1.0, -1.0, 0.5]}


def _run(fn, bound):
    lx, lm = torch.tensor(X, requires_grad=True), torch.tensor(bound, requires_grad=True)
    out = fn(lx * 1, lm * 1)
    (out * (torch.arange(out.numel()) + 1).reshape(out.shape)).sum().backward()
    return out.detach(), lx.grad, lm.grad


@pytest.mark.parametrize("bound", sorted(BOUNDS))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, bound):
    assert_runs_like_eager(fn, _run, BOUNDS[bound])
