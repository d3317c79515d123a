"""Session 41 (helper-68): ``torch.positive(x)``, ``F.dropout(x, training=False)``, ``F.dropout(x, 0.0)`` are ``x``
itself in eager, and are traced so (same_tensor_results.py, Note [ops eager returns as their input]): with gradients a
write after or through one was refused ("cannot express as views of one tensor"). Checked against eager on fresh
inputs (values, written inputs, gradients; reference schedules, first and cached call), with and without gradients.
"""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]

OPS = {
    "positive": lambda x: torch.positive(x), "positive_method": lambda x: x.positive(),
    "dropout_eval": lambda x: F.dropout(x, training=False), "dropout_p0": lambda x: F.dropout(x, 0.0),
    "dropout_module_eval": lambda x: torch.nn.Dropout(0.3).eval()(x),
    "dropout_p0_train": lambda x: F.dropout(x, p=0.0, training=True),
}


def _after(op):
    def prog(x):
        y = op(x)
        x.add_(1.0)
        return y * 2

    return prog


def _through(op):
    def prog(x):
        y = op(x)
        y.mul_(3.0)
        return x * 1, y.sin()

    return prog


def _view_through(op):
    def prog(x):
        y = op(x[1])
        y.add_(1.0)
        return x.exp()

    return prog


CASES = [(n, k) for n in OPS for k in ("after", "through", "view_through")]
BUILD = {"after": _after, "through": _through, "view_through": _view_through}


def _make():
    w = (torch.arange(12.0).reshape(3, 4) / 5 - 1).requires_grad_()
    return [w], (w * 1,)


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_with_gradients_matches_eager(name, kind):
    assert_matches_eager(BUILD[kind](OPS[name]), _make)


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_without_gradients_matches_eager(name, kind, schedule):
    prog = BUILD[kind](OPS[name])
    x = torch.arange(12.0).reshape(3, 4) / 5 - 1
    want_x = x.clone()
    want = prog(want_x)
    got_x = x.clone()
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(got_x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_x, want_x)


def test_a_returned_positive_is_the_input():
    x = torch.randn(3)
    assert fusion_alias.jit(lambda t: torch.positive(t), backend="reference")(x) is torch.positive(x)


def test_positive_of_a_bool_tensor_raises_as_eager():
    with pytest.raises(RuntimeError):
        torch.positive(torch.ones(3, dtype=torch.bool))
    with pytest.raises(Exception):
        fusion_alias.jit(lambda t: torch.positive(t), backend="reference")(torch.ones(3, dtype=torch.bool))


def test_a_training_dropout_still_draws():
    torch.manual_seed(0)
    out = fusion_alias.jit(lambda t: F.dropout(t, 0.5) * 1, backend="reference")(torch.ones(1000))
    assert 0 < (out == 0).sum() < 1000
