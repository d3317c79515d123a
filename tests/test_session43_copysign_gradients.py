"""Session 43 (helper-70): ``copysign`` with eager's gradient formula, in place too (copysign_gradients.py, Note
[copysign's gradient, eager's formula]).

Before: ``torch.copysign(x, y)`` gave the magnitude ``+-g`` at ``x = +-inf`` where eager's ``g * (r / x)`` is
``inf / inf`` = NaN, and ``x.copysign_(y)`` left ``y``'s gradient None where eager's is zeros (NaN behind an
infinite partial such as ``exp(1e5)``), silently (plain ``thunder.jit`` too).
"""

import pytest
import torch

from fusion_alias.backends.reference import SCHEDULES
from tests.nan_gradient_checks import assert_matches_eager, leaves_from

INF, NAN = float("inf"), float("nan")


def magnitude_at_infinity(x, y):
    return torch.copysign(x, y)


def magnitude_method_number_sign(x, y):
    return x.copysign(-1.0) * y


def sign_broadcast(x, y):
    return torch.copysign(x.reshape(2, 3), y[:3])


def in_place(x, y):
    x.copysign_(y)
    return x


def in_place_behind_exp(x, y):
    x.copysign_(y.exp())
    return x * 2


def in_place_then_read(x, y):
    t = x * 1
    t.copysign_(y)
    return t, x * y


def in_place_keyword(x, y):
    x.copysign_(other=y.exp())
    return x


PROGRAMS = [magnitude_at_infinity, magnitude_method_number_sign, sign_broadcast, in_place, in_place_behind_exp,
            in_place_then_read, in_place_keyword]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    make = leaves_from([INF, -INF, 0.0, NAN, -2.0, 1.5], [1.0, -2.0, -0.0, 1e5, NAN, -3.0])
    assert_matches_eager(fn, make, schedule)


def test_guard_an_overlapping_sign_is_still_refused_as_eager_refuses_it():
    """(A guard: refused before the fix too; the in-place op is a symbol of its own now.)"""
    import fusion_alias

    def f(x):
        x.copysign_(x[0])
        return x

    leaf = torch.randn(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="single memory location"):
        f(leaf * 1)
    with pytest.raises(Exception, match="single memory location"):
        fusion_alias.jit(f, backend="reference")(leaf * 1)
