"""Session 42 (helper-69): ``bernoulli``, ``div(..., rounding_mode="floor")`` and ``copysign``'s sign operand of a
tensor that requires grad carry eager's zero gradient (zero_gradient_ops.py, Note [ops whose eager gradient is
zero]).

Thunder 0.2.6 computes them with ops it takes as constants, so the result required no grad and the leaves behind
it got ``grad`` None. Eager sends the zero on through the ops before, where a partial that is infinite makes it NaN
(fuzz ``--special-values --grad`` seed 20962 #22: ``torch.bernoulli(torch.sigmoid(b.exp()))`` with 1e5 in ``b``;
plain ``thunder.jit`` too). Checked against eager on fresh inputs with infinities and NaN among them (values,
written inputs, gradients with NaN compared as equal, ``None`` against ``None``, and each output's
``requires_grad``), on the reference schedules, first and cached call, the random draws seeded alike.
"""

import pytest
import torch

import fusion_alias
from tests.nan_gradient_checks import run_with_random_loss
from tests.grad_helpers import assert_runs_like_eager

INF, NAN = float("inf"), float("nan")


def bernoulli_of_exp(x, y):
    return torch.bernoulli(torch.sigmoid(x.exp()))


def bernoulli_method(x, y):
    return torch.sigmoid(x.exp()).bernoulli() * y


def bernoulli_then_write(x, y):  # seed 20962 #22's shape: the draw, then a write of the same memory
    t0 = torch.bernoulli(torch.sigmoid(x.exp()).reshape(-1))
    x.add_(x.cummax(-1)[0])
    return t0


def bernoulli_of_a_written(x, y):
    x.mul_(2)
    return torch.bernoulli(torch.sigmoid(x.exp())), y * 1


def floor_div(x, y):
    return torch.div(x.exp(), 2.0, rounding_mode="floor")


def floor_div_method_both(x, y):
    return x.exp().div(y.exp() + 1, rounding_mode="floor")


def floor_div_keywords(x, y):
    return torch.div(input=x.exp(), other=y, rounding_mode="floor")


def floor_div_after_write(x, y):
    y.add_(1)
    return torch.div(x.exp(), y, rounding_mode="floor"), y


def floor_div_in_place(x, y):
    t = x.exp()
    t2 = t * 1
    t2.div_(y.exp() + 1, rounding_mode="floor")
    return t2


def floor_div_in_place_of_an_argument(x, y):
    x.div_(y, rounding_mode="floor")
    return x


def trunc_div(x, y):  # (right before: trunc carries a zero gradient)
    return torch.div(x.exp(), 2.0, rounding_mode="trunc")


def true_div(x, y):  # (no rounding mode: the ordinary gradient)
    return torch.div(x, y.exp() + 1)


def copysign_sign(x, y):  # (magnitudes clamped: at an infinite magnitude eager's own gradient is inf / inf, NaN)
    return torch.copysign(y.clamp(-5, 5), x.exp())


def copysign_method(x, y):
    return y.clamp(-5, 5).copysign(x.exp()) + x


def copysign_first(x, y):  # the magnitude keeps its own gradient
    return torch.copysign(x.exp().clamp(max=5), y)


def copysign_after_write(x, y):
    x.mul_(2)
    return torch.copysign(y.clamp(-5, 5), x.exp()), x


PROGRAMS = [bernoulli_of_exp, bernoulli_method, bernoulli_then_write, bernoulli_of_a_written, floor_div,
            floor_div_method_both, floor_div_keywords, floor_div_after_write, trunc_div, true_div, copysign_sign,
            copysign_method, copysign_first, copysign_after_write]

VALUES = {
    "finite": ([0.5, -1.0, 2.0, 0.25], [1.5, 0.5, -2.0, 3.0]),
    "exp_overflows": ([1e5, -1.0, 2.0, 100.0], [1.5, 0.5, -2.0, 3.0]),
    "infinities": ([INF, -INF, 2.0, 0.0], [1.5, INF, -2.0, 3.0]),
}


def _inputs(values):
    xs, ys = values

    def make():
        lx = torch.tensor(xs, requires_grad=True)
        ly = torch.tensor(ys, requires_grad=True)
        return [lx, ly], [lx * 1, ly * 1]

    return make


_run = run_with_random_loss  # (tests/nan_gradient_checks.py)


@pytest.mark.parametrize("values", sorted(VALUES))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, values):
    make = _inputs(VALUES[values])
    assert_runs_like_eager(fn, _run, make)


def test_the_fuzz_program_gets_a_nan_where_eager_does():
    """seed 20962 #22 in brief: eager's gradient is NaN where ``exp`` overflowed, zero elsewhere."""
    make = _inputs(VALUES["exp_overflows"])
    got = _run(fusion_alias.jit(bernoulli_of_exp, backend="reference"), make)
    assert got[3] == [True]
    assert torch.isnan(got[2][0]).tolist() == [True, False, False, True]
    assert got[2][1] is None


def test_without_grad_nothing_changes():
    x = torch.tensor([0.5, 3.0])
    jitted = fusion_alias.jit(floor_div, backend="reference")
    out = jitted(x, x)
    assert not out.requires_grad
    torch.testing.assert_close(out, floor_div(x, x))


def sign_times_itself(x, y):  # (eager_gradients.py, Note [a zero gradient, not g * 0])
    return x.sign() * x + y


def sign_of_a_written(x, y):
    x.mul_(y)
    return torch.sign(x) * x


def sign_in_place(x, y):
    t = x * 1
    t.sign_()
    return t * y


@pytest.mark.parametrize("values", sorted(VALUES) + ["nan"])
@pytest.mark.parametrize("fn", [sign_times_itself, sign_of_a_written, sign_in_place], ids=lambda f: f.__name__)
def test_sign_gradient_matches_eager(fn, values):
    make = _inputs(VALUES.get(values) or ([NAN, -1.0, INF, 0.0], [1.5, NAN, -2.0, INF]))
    assert_runs_like_eager(fn, _run, make)
