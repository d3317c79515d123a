"""Session 43 (helper-70): ``prod``'s gradient with eager's formulas, NaN and infinities among the elements with a
zero (prod_gradient.py, Note [prod's gradient, eager's two formulas]).

Before, eager_gradients.py's rule handed every element but the zero 0 where eager's product of the others is NaN
(``[nan, 2, 0, 3].prod()``: eager ``[0, nan, nan, nan]``, was ``[0, 0, nan, 0]``), and a slice without a zero took
``prod / a`` (``inf / inf``) where eager, seeing a zero elsewhere in the input, takes the product of the others.
"""

import pytest
import torch

from fusion_alias.backends.reference import SCHEDULES
from tests.nan_gradient_checks import assert_matches_eager, leaves_from

INF, NAN = float("inf"), float("nan")


def all_elements(x, y):
    return x.prod() * y


def along_a_dim(x, y):
    return x.reshape(2, 3).prod(1) * y[:2]


def along_a_dim_kept(x, y):
    return x.reshape(2, 3).prod(0, keepdim=True) * y[:3]


def all_of_a_matrix(x, y):
    return x.reshape(3, 2).prod() + y


def after_a_write(x, y):
    y.mul_(2)
    return x.reshape(2, 3).prod(-1), y


def a_vector_along_its_dim(x, y):  # (Thunder's prim reduces every dim, as for x.prod(): traced as a 2-d one)
    return x.prod(0) * y[0]


def fuzz_50103_39(x, y):  # (its shape: a flattened input, keepdim)
    return x.reshape(2, 3).view(-1).prod(0, keepdim=True), torch.clamp(y, max=x.prod(-1))


def in_float64(x, y):
    return torch.prod(x.reshape(2, 3), 1, dtype=torch.float64) * y[:2]


VALUES = {
    "nan_and_a_zero": ([NAN, 2.0, 0.0, 3.0, 1.5, -1.0], [1.0, 2.0, 3.0, 0.5, -1.0, 4.0]),
    "inf_and_a_zero": ([INF, 2.0, 0.0, 3.0, 1.5, -1.0], [1.0, 2.0, 3.0, 0.5, -1.0, 4.0]),
    "inf_beside_a_zero_row": ([1.0, INF, 3.0, 0.0, 2.0, 5.0], [1.0, 2.0, 3.0, 0.5, -1.0, 4.0]),
}
TWO_ZEROS = ([0.0, 0.0, INF, 2.0, -INF, 1.0], [1.0, 2.0, 3.0, 0.5, -1.0, 4.0])
PROGRAMS = [all_elements, along_a_dim, along_a_dim_kept, all_of_a_matrix, after_a_write, in_float64,
            a_vector_along_its_dim, fuzz_50103_39]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("values", sorted(VALUES))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, values, schedule):
    assert_matches_eager(fn, leaves_from(*VALUES[values]), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [along_a_dim, along_a_dim_kept, after_a_write, in_float64, a_vector_along_its_dim,
                                fuzz_50103_39], ids=lambda f: f.__name__)
def test_two_zeros_in_a_slice_along_a_dim(fn, schedule):
    """``prod(dim)``: the others' product, NaN behind the infinity; (``x.prod()`` with two zeros: zeros, whatever
    the others hold, as eager; right before too)."""
    assert_matches_eager(fn, leaves_from(*TWO_ZEROS), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("values", [TWO_ZEROS, ([1.5, -2.0, 3.0, 0.5, 2.0, -1.0], [1.0, 2.0, 3.0, 0.5, -1.0, 4.0]),
                                    ([1.5, -INF, 3.0, 0.5, 2.0, -1.0], [1.0, 2.0, 3.0, 0.5, -1.0, 4.0])],
                         ids=["two_zeros", "finite", "inf_no_zero"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_guard_what_was_right_stays_right(fn, values, schedule):
    """(A guard: these passed before the fix too.) No zero: ``g * prod / a``; ``x.prod()`` of two zeros: zeros."""
    if values is TWO_ZEROS and fn not in (all_elements, all_of_a_matrix):
        pytest.skip("test_two_zeros_in_a_slice_along_a_dim")
    assert_matches_eager(fn, leaves_from(*values), schedule)
