"""Session 43 (helper-70): ``hardsigmoid``, ``hardswish``, ``softshrink`` and ``rrelu`` in evaluation mode give a NaN
element eager's gradient
(nan_element_gradients.py, Note [a NaN element takes the branch eager's comparisons give it]).

Found by the sweep of the neighbours of ``nan_to_num``'s ``g * isfinite(x)``: Thunder's decompositions put a NaN
element in another branch than eager's comparisons do (``F.hardswish`` at NaN: eager ``g``, was NaN;
``F.hardsigmoid``: eager 0, was ``g / 6``; ``F.softshrink``: eager ``g``, was 0; ``F.rrelu(training=False)``: eager
``g * slope``, was ``g``, fuzz ``fresh --special-values --grad`` 70102 #32), silently, plain ``thunder.jit`` too.
"""

import pytest
import torch
import torch.nn.functional as F

from fusion_alias.backends.reference import SCHEDULES
from tests.nan_gradient_checks import assert_matches_eager, leaves_from

INF, NAN = float("inf"), float("nan")


def hardsigmoid(x, y):
    return F.hardsigmoid(x) * y


def hardswish(x, y):
    return F.hardswish(x) * y


def hardswish_module_after_a_write(x, y):
    x.mul_(y)
    return torch.nn.Hardswish()(x)


def softshrink(x, y):
    return F.softshrink(x, 1.0) * y


def softshrink_module(x, y):
    return torch.nn.Softshrink(lambd=0.25)(x * y)


def rrelu_evaluation(x, y):
    return F.rrelu(x, 0.1, 0.3) * y


def fuzz_70102_32(x, y):  # (in place, evaluation mode: eager's leaky_relu backward, g * slope at a NaN and at 0)
    return F.rrelu(x, 0.2, 0.2, training=False, inplace=True), y * 1


def rrelu_in_place_function(x, y):
    torch.rrelu_(x, 0.25, 0.5)
    return x * y


def rrelu_module(x, y):
    return torch.nn.RReLU(0.1, 0.3, inplace=True).eval()(x * y)


PROGRAMS = [hardsigmoid, hardswish, hardswish_module_after_a_write, softshrink, softshrink_module, rrelu_evaluation,
            fuzz_70102_32, rrelu_in_place_function, rrelu_module]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, schedule):
    make = leaves_from([NAN, -3.0, 3.0, INF, -INF, 0.5, -1.25, 0.0], [1.0, 2.0, 3.0, 0.5, 1.5, NAN, -1.0, 1.0])
    assert_matches_eager(fn, make, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_hardswish_of_halves_rounds_its_gradient_once(schedule):
    """eager's float16 kernel computes ``g * (x / 3 + 1 / 2)`` in float32 and rounds once (the value is compared in
    float16: Thunder's float16 forward is an ulp off eager's at some elements, as before)."""
    def f(x, y):
        return F.hardswish(x.half()), x.detach().sin() * y

    make = leaves_from([NAN, -2.0, 0.7, -1.3, 2.9, 0.1], [1.0, 2.0, 3.0, 0.5, 1.5, 1.0])
    assert_matches_eager(f, make, schedule)
