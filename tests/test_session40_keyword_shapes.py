"""Session 40: eager's keyword names for a shape op's arguments and for a wrapped function's operand.

``x.reshape(shape=(4,))``, ``x.view(size=...)``, ``x.permute(dims=...)``, ``x.split(split_size=1)`` and
``torch.nan_to_num(input=x)`` raised Thunder's ``TypeError: reshape() got an unexpected keyword argument
'shape'`` (plain ``thunder.jit`` too) where eager runs them (eager_keywords.py, Note [eager's keyword names
for operands]); ``F.relu(input=x)`` and the other torch functions whose lookaside this project lends
raised ``traced() missing 1 required positional argument`` (wrapped_lookasides.py, Note [the operand by
eager's name]). Each program is compared with eager on fresh inputs, the input it writes through a view
included, under both reference schedules; a name eager refuses is still refused.
"""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from tests.helpers import assert_same, run_both

SCHEDULES = ["reads-first", "writes-first"]


def reshape_shape(x):
    return x.reshape(shape=(25,)) * 2


def torch_reshape_input(x):
    return torch.reshape(input=x, shape=(5, 5)).exp()


def view_size_written(x):
    v = x.view(size=(25,))
    v.mul_(2)  # a write through the view: x changes too
    return x + 1


def permute_dims_written(x):
    t = x.permute(dims=(1, 0))
    t[0].add_(1)  # writes column 0 of x
    return x.sum(0)


def split_size(x):
    a, b = x.split(split_size=3)[:2]
    return a.sum() + b.sum()


def nan_to_num_input(x):
    y = x.clone()
    y[0, 0] = float("nan")
    return torch.nan_to_num(input=y, nan=0.5)


def relu_input(x):
    return F.relu(input=x) + torch.relu(input=x)


def relu_input_inplace(x):
    F.relu(input=x[1], inplace=True)  # writes row 1 of x
    return x * 2


def sigmoid_input(x):
    return torch.sigmoid(input=x * 100)


def clamp_input(x):
    return torch.clamp(input=x, max=0.25)


def lerp_input(x):
    return torch.lerp(input=x, end=x * 2, weight=0.5)


def elu_input(x):
    return F.elu(input=x, alpha=0.5)


def normalize_input(x):
    return F.normalize(input=x, dim=0)


PROGRAMS = [
    reshape_shape, torch_reshape_input, view_size_written, permute_dims_written, split_size, nan_to_num_input,
    relu_input, relu_input_inplace, sigmoid_input, clamp_input, lerp_input, elu_input, normalize_input,
]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_keyword_spelling_runs_as_eager(fn, schedule):
    got = run_both(fn, lambda b: (b,), backend="reference", schedule=schedule)
    assert_same(*got[1:])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.reshape(size=(25,)),  # (eager's name is shape)
        lambda x: F.relu(x=x),  # (eager's name is input)
        lambda x: x.view(shape=(25,)),  # (eager's name is size)
    ],
    ids=["reshape-size", "relu-x", "view-shape"],
)
def test_a_name_eager_refuses_is_refused(fn):
    x = torch.randn(5, 5)
    with pytest.raises(TypeError):
        fn(x.clone())
    with pytest.raises(TypeError):
        fusion_alias.jit(fn)(x.clone())
