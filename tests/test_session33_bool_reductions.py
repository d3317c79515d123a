"""Session 33: ``sum``/``prod`` with ``dtype=torch.bool`` return eager's bool (any/all), not a count.

Until now fusion_alias returned the int64 count of a bool sum (``tensor(3)`` for eager's ``tensor(True)``):
a documented limit since session 30 (bool_reductions.py, Note [a sum in bool is any]). Each case writes its
input in place first, then reduces, and compares value and dtype with eager under both schedules."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")

INPUTS = {
    "bool": lambda: torch.tensor([[True, False, False], [False, False, False]]),
    "int64": lambda: torch.tensor([[1, 0, -2], [0, 0, 0]]),
    "uint8": lambda: torch.tensor([[1, 0, 2], [0, 0, 0]], dtype=torch.uint8),
    "float": lambda: torch.tensor([[0.5, 0.0, float("nan")], [0.0, -0.0, 0.0]]),
}

CALLS = {
    "sum": lambda x: x.sum(dtype=torch.bool),
    "sum_dim": lambda x: x.sum(1, dtype=torch.bool),
    "sum_dims_keepdim": lambda x: torch.sum(x, (0, 1), keepdim=True, dtype=torch.bool),
    "sum_no_dims": lambda x: x.sum(dim=(), dtype=torch.bool),
    "prod": lambda x: x.prod(dtype=torch.bool),
    "prod_dim": lambda x: torch.prod(x, 0, dtype=torch.bool),
    "prod_dim_keepdim": lambda x: x.prod(1, keepdim=True, dtype=torch.bool),
    "sum_other_dtype": lambda x: x.sum(1, dtype=torch.float64),
    "prod_plain": lambda x: x.prod(0),
}


def _writes_then_reduces(call):
    def fn(x):
        x.mul_(torch.ones((), dtype=x.dtype))  # an in-place write of the same values
        return call(x), x.sum(0)
    return fn


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("dtype", list(INPUTS))
@pytest.mark.parametrize("call", list(CALLS))
def test_reduction_to_bool_matches_eager(call, dtype, schedule):
    fn = _writes_then_reduces(CALLS[call])
    x_e, x_j = INPUTS[dtype](), INPUTS[dtype]()
    try:
        expected = fn(x_e)
    except Exception as e:  # eager rejects it: so must the compiled function
        with pytest.raises(type(e)):
            fusion_alias.jit(fn, backend="reference", schedule=schedule)(x_j)
        return
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(x_j)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g, e, equal_nan=True)
    torch.testing.assert_close(x_j, x_e, equal_nan=True)


def _bool_sum_and_loss(w, x):
    return w.sum(1, dtype=torch.bool), (w * x).sum()


def test_a_bool_sum_of_an_input_that_requires_grad_raises_as_in_eager():
    """(Of an intermediate value eager raises too and ours runs: Thunder's proxies of intermediates do not
    say whether they require grad. A missed rejection, docs/limits.md.)"""
    w = torch.tensor([[1.0, 0.0], [0.0, 0.0]], requires_grad=True)
    x = torch.ones(2, 2)
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Bool"):
        _bool_sum_and_loss(w, x)
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Bool"):
        fusion_alias.jit(_bool_sum_and_loss, backend="reference")(w, x)


def test_a_bool_sum_of_a_detached_tensor_with_gradients():
    def fn(w, x):
        return (w * x).detach().sum(1, dtype=torch.bool), (w * x).sum()
    w = torch.tensor([[1.0, 0.0], [0.0, 0.0]], requires_grad=True)
    w2 = w.detach().clone().requires_grad_()
    x = torch.ones(2, 2)
    expected, got = fn(w, x), fusion_alias.jit(fn, backend="reference")(w2, x)
    assert got[0].dtype == torch.bool and not got[0].requires_grad
    torch.testing.assert_close(got[0], expected[0])
    got[1].backward()
    expected[1].backward()
    torch.testing.assert_close(w2.grad, w.grad)
