"""Session 41 (helper-68): ``x.round(decimals=d)`` and ``torch.round(x, decimals=d)`` run, with eager's values
(round_decimals.py, Note [round with decimals]); they raised Thunder's "unexpected keyword argument 'decimals'".
Values compared bit for bit with eager's (ties, signed zeros, infinities, NaN; float16/bfloat16 through float32);
with gradients, the result requires grad with eager's zero gradient; an integer tensor still raises, as eager does.
"""

import pytest
import torch

import fusion_alias
from tests.grad_helpers import assert_matches_eager

SCHEDULES = ["reads-first", "writes-first"]
SPECIAL = [0.5, 1.5, 2.5, -0.5, -0.0, 0.0, float("inf"), -float("inf"), float("nan"), 0.05, 0.15, 0.25, 1e30]


def _values(dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4000, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-3, 5, (4000,), generator=g)
    return torch.cat([x, torch.tensor(SPECIAL, dtype=torch.float64)]).to(dtype)


def _same(got, want):
    real = ~want.isnan()
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got[real], want[real])
    assert torch.equal(got[real].signbit(), want[real].signbit())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("d", [-3, -1, 0, 1, 2, 4, 10])
def test_values_are_eagers(dtype, d):
    x = _values(dtype, d + 100)
    got = fusion_alias.jit(lambda t: t.round(decimals=d), backend="reference")(x)
    assert got.dtype == dtype
    _same(got, torch.round(x, decimals=d))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_function_spelling_and_a_write_after(schedule):
    def fn(x):
        r = torch.round(x, decimals=2)
        x.mul_(3)
        return r, x * 1

    x = _values(torch.float32, 7)
    want_x, got_x = x.clone(), x.clone()
    want = fn(want_x)
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(got_x)
    for g, w in zip(got, want):
        _same(g, w)
    _same(got_x, want_x)


def rounded_sum(x):
    return x.round(decimals=1).sum() + x.sum()


def rounded_returned(x):
    return x.round(decimals=-1), x * 2


@pytest.mark.parametrize("fn", [rounded_sum, rounded_returned], ids=lambda f: f.__name__)
def test_with_gradients_matches_eager(fn):
    def make():
        w = (torch.arange(12.0).reshape(3, 4) * 1.37 - 5).requires_grad_()
        return [w], (w * 1,)

    assert_matches_eager(fn, make)
    first = (lambda out: out[0] if isinstance(out, tuple) else out)
    got, want = first(fusion_alias.jit(fn, backend="reference")(make()[1][0])), first(fn(make()[1][0]))
    assert got.requires_grad == want.requires_grad


def test_an_integer_tensor_still_raises():
    x = torch.tensor([15, 25])
    with pytest.raises(RuntimeError):
        torch.round(x, decimals=1)
    with pytest.raises(Exception):
        fusion_alias.jit(lambda t: t.round(decimals=1), backend="reference")(x)
