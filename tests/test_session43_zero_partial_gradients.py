"""Session 43 (helper-70): ``nan_to_num`` and ``sigmoid`` multiply the incoming gradient by their partial, as eager
does, so a NaN or infinite gradient at an element whose partial is 0 stays NaN (zero_partial_gradients.py, Note [a
cotangent times a zero partial stays NaN]).

Before, Thunder's decompositions selected (``where``) and gave 0 there, silently (plain ``thunder.jit`` too): fuzz
``fresh --special-values --grad`` seed 70019 #49 (``b.nan_to_num_()`` of ``b = x0[1:]``, then
``bernoulli(sigmoid(x0.exp()))``), and ``x.sigmoid().logit()`` at ``x = -inf``.
"""

import pytest
import torch
import torch.nn.functional as F

from fusion_alias.backends.reference import SCHEDULES
from tests.nan_gradient_checks import assert_matches_eager, leaves_from

INF, NAN = float("inf"), float("nan")


def fuzz_70019_49(x0, y):  # (its shape, reduced: the draw's zero gradient meets exp(3.4e38) = inf)
    b = x0[1:]
    b.nan_to_num_()
    return torch.bernoulli(torch.sigmoid(x0.exp()).reshape(-1)), y * 1


def nan_to_num_times_itself(x, y):  # eager: g * x * isfinite(x) is NaN at each non-finite x
    return torch.nan_to_num(x) * x + y


def nan_to_num_keywords_behind_exp(x, y):
    return x.nan_to_num(nan=1.0, posinf=100.0).exp().exp() * y


def nan_to_num_in_place_of_a_view(x, y):
    v = x[1:]
    v.nan_to_num_(neginf=-1.0)
    return x * x, y * 1


def sigmoid_logit(x, y):
    return x.sigmoid().logit() * y


def sigmoid_in_place_logit(x, y):
    x.sigmoid_()
    return x.logit(), y * 1


def sigmoid_module_log(x, y):
    return torch.nn.Sigmoid()(x).log() + F.sigmoid(y)


PROGRAMS = [fuzz_70019_49, nan_to_num_times_itself, nan_to_num_keywords_behind_exp, nan_to_num_in_place_of_a_view,
            sigmoid_logit, sigmoid_in_place_logit, sigmoid_module_log]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    make = leaves_from([1.0, INF, NAN, -INF, 3.4e38, -1e4], [0.5, -INF, 2.0, NAN, 1.0, 3.0])
    assert_matches_eager(fn, make, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [sigmoid_logit, nan_to_num_times_itself], ids=lambda f: f.__name__)
def test_halves_match_eager(fn, schedule):
    """float16: eager's CPU kernels round each product of the backward to float16."""
    make = leaves_from([0.3, -INF, NAN, 2.0, -10.0, 0.7], [1.0, 2.0, 3.0, 0.25, 4.0, 5.0], dtype=torch.float16)
    assert_matches_eager(fn, make, schedule)


def test_nan_to_num_without_grad_takes_eager_keywords():
    import fusion_alias

    x = torch.tensor([1.0, INF, NAN, -INF])
    jitted = fusion_alias.jit(lambda x: x.nan_to_num(posinf=2.0, neginf=-3.0), backend="reference")
    torch.testing.assert_close(jitted(x), x.nan_to_num(posinf=2.0, neginf=-3.0))
