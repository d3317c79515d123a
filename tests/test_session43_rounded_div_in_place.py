"""Session 43 (helper-70): ``x.div_(y, rounding_mode="floor")`` and ``"trunc"`` in place send ``y`` (and ``x``'s old
value) eager's zero gradient (zero_gradient_ops.py, Note [a floor div_ in place, joined inside its own symbol]).

Before, ``y``'s gradient was None where eager's is zeros, NaN behind an infinite partial (``exp(1e5)``), silently
(plain ``thunder.jit`` too); the out-of-place forms were right already.
"""

import pytest
import torch

from fusion_alias.backends.reference import SCHEDULES
from tests.nan_gradient_checks import assert_matches_eager, leaves_from

INF, NAN = float("inf"), float("nan")


def floor_in_place(x, y):
    x.div_(y, rounding_mode="floor")
    return x


def floor_in_place_behind_exp(x, y):
    x.div_(y.exp(), rounding_mode="floor")
    return x * 2


def trunc_in_place_behind_exp(x, y):
    t = x.sin()
    t.div_(y.exp() + 1, rounding_mode="trunc")
    return t, y * 1


def floor_in_place_of_a_broadcast(x, y):
    x = x.reshape(2, 3)
    x.div_(y[:3].exp(), rounding_mode="floor")
    return x


PROGRAMS = [floor_in_place, floor_in_place_behind_exp, trunc_in_place_behind_exp, floor_in_place_of_a_broadcast]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    make = leaves_from([INF, -2.0, 0.5, NAN, 7.0, 1e5], [1e5, -2.0, 3.0, 1.0, NAN, 0.5])
    assert_matches_eager(fn, make, schedule)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_guard_an_overlapping_divisor_is_still_refused_as_eager_refuses_it(mode):
    """(A guard: refused before the fix too; the in-place op is a symbol of its own now.)"""
    import fusion_alias

    def f(x):
        x.div_(x[0], rounding_mode=mode)
        return x

    leaf = torch.randn(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="single memory location"):
        f(leaf * 1)
    with pytest.raises(Exception, match="single memory location"):
        fusion_alias.jit(f, backend="reference")(leaf * 1)
