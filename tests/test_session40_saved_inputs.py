"""Session 40 (helper): unary and binary functions whose eager backward reads their input, then a write.

``y = x.sinh(); x.add_(0.25); return y`` in a call that computes gradients: eager raises at backward ("one of
the variables needed for gradient computation has been modified by an inplace operation"); fusion_alias
returned the gradient of the functional program (a missed rejection, session 40 hand probe), as for
``cosh``, ``asin``, ``acos``, ``log2``, ``log10``, ``erfc``, ``lgamma``, ``digamma``, ``sinc``,
``nan_to_num``, ``F.logsigmoid``, ``F.hardsigmoid``, ``F.selu``, ``F.celu``, ``F.relu6``, ``torch.atan2``,
``torch.fmax``, ``torch.fmin``: saved_versions.py's table had no entry for them (tests/test_saved_versions.py
re-derives the new entries in eager with the old). Each is now refused saying eager raises; the write before
the op and the op of a clone still run and match eager (every reference schedule).
"""

import pytest
import torch
import torch.nn.functional as F

import fusion_alias
from fusion_alias import AliasInputError
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]

OPS = {
    "sinh": torch.sinh, "cosh": torch.cosh, "asin": torch.asin, "acos": torch.acos, "log2": torch.log2,
    "log10": torch.log10, "erfc": torch.erfc, "lgamma": torch.lgamma, "digamma": torch.digamma, "sinc": torch.sinc,
    "nan_to_num": torch.nan_to_num, "logsigmoid": F.logsigmoid, "hardsigmoid": F.hardsigmoid, "selu": F.selu,
    "celu": F.celu, "relu6": F.relu6, "atan2": lambda x: torch.atan2(x, x + 1), "fmax": lambda x: torch.fmax(x, x * 0),
    "fmin": lambda x: torch.fmin(x * 0, x),
}


def _leaf():  # in (0.1, 0.9): in every op's domain
    return (torch.rand(3, generator=torch.Generator().manual_seed(0)) * 0.8 + 0.1).requires_grad_()


def _then_write(op):
    def fn(w):
        x = w * 0.5
        y = op(x)
        x.add_(0.25)
        return y
    return fn


def _write_first(op):
    def fn(w):
        x = w * 0.5
        x.add_(0.25)
        return op(x)
    return fn


def _of_a_clone(op):
    def fn(w):
        x = w * 0.5
        y = op(x.clone())
        x.add_(0.25)
        return y, x
    return fn


@pytest.mark.parametrize("name", list(OPS))
def test_refused_where_eager_raises_at_backward(name):
    fn = _then_write(OPS[name])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fn(_leaf()).sum().backward()
    for schedule in SCHEDULES:
        with pytest.raises(AliasInputError, match="Eager PyTorch raises at backward"):
            fusion_alias.jit(fn, schedule=schedule)(_leaf())


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("form", [_write_first, _of_a_clone], ids=lambda f: f.__name__.strip("_"))
def test_eager_valid_neighbours_match_eager(name, form):
    def make():
        w = _leaf()
        return [w], (w,)

    assert_matches_eager(form(OPS[name]), make)
