"""Session 41 (helper-68): eager's keyword names for the shape of ``expand``/``repeat`` and the operand of
``expand_as``/``view_as`` (eager_keywords.py, Note [eager's keyword names for operands]).

``x.expand(size=(5, 5))``, ``x.repeat(repeats=(1, 2))``, ``x.expand_as(other=y)`` and ``x.view_as(other=y)`` raised
Thunder's ``TypeError: expand() got an unexpected keyword argument 'size'`` (plain ``thunder.jit`` too) where eager
runs them. Each program is compared with eager on fresh inputs (the base written through a view included), under
both reference schedules, and with gradients; a name eager refuses is still refused.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager
from tests.helpers import assert_same, run_both

SCHEDULES = ["reads-first", "writes-first"]


def expand_size(x):
    return x[:1].expand(size=(5, 5)) * 2


def expand_size_written_after(x):
    e = x[0].expand(size=(3, 5))
    x[0].add_(1)  # the expanded view sees the write
    return e * 1


def repeat_repeats(x):
    r = x.repeat(repeats=(1, 2))
    x.mul_(2)  # a copy: r keeps the old values
    return r, x * 1


def expand_as_other(x):
    return x[:, :1].expand_as(other=x) + x


def view_as_other_written(x):
    v = x.view_as(other=x.reshape(25))
    v.mul_(3)  # a write through the view: x changes too
    return x + 1


PROGRAMS = [expand_size, expand_size_written_after, repeat_repeats, expand_as_other, view_as_other_written]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_matches_eager(fn, schedule):
    assert_same(*run_both(fn, lambda b: (b,), backend="reference", schedule=schedule)[1:])


def repeat_repeats_read(x):
    return x.repeat(repeats=(1, 2)).sin()


# (``repeat_repeats`` with gradients stays refused as before: docs/limits.md, a repeat read after a write)
@pytest.mark.parametrize("fn", [expand_size, repeat_repeats_read, expand_as_other, view_as_other_written],
                         ids=lambda f: f.__name__)
def test_with_gradients_matches_eager(fn):
    def make():
        w = (torch.arange(25.0).reshape(5, 5) / 10 - 1).requires_grad_()
        return [w], (w * 1,)

    assert_matches_eager(fn, make)


def test_a_name_eager_refuses_is_still_refused():
    def fn(x):
        return x.expand(sz=(5, 5))

    with pytest.raises(TypeError):
        fn(torch.ones(1, 5))
    with pytest.raises(TypeError):
        fusion_alias.jit(fn, backend="reference")(torch.ones(1, 5))
