"""Session 34: ``sum``/``prod`` with ``dtype=torch.bool`` of a value that requires grad, with grad mode on.

Eager raises "Autograd not support dtype: Bool" for it. Before, fusion_alias refused it only for a tensor of
the call (Thunder's proxies of intermediate values say ``requires_grad=False``) and ran it for ``w * x``,
``w[0]``, an ``x`` written with ``x.mul_(w)`` and a value made in an ``enable_grad`` block: missed rejections
(bool_reductions.py, Note [a bool reduction of a value that requires grad]). 18 of the 20 raising cases
ran on the code before (b6e9b87; ``input_method`` was refused there too). Each case runs eager and the compiled
function on fresh inputs, under both schedules; where eager runs, values, dtypes, the written inputs and the
gradients must match."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


def _inputs():
    w = torch.tensor([[1.0, 0.0], [0.0, 2.0]], requires_grad=True)
    x = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    return w, x


def intermediate(w, x):
    return (w * x).sum(1, dtype=torch.bool), (w * x).sum()


def intermediate_function(w, x):
    return torch.sum(x * w, dtype=torch.bool), (w * x).sum()


def intermediate_prod(w, x):
    return torch.prod(w + x, 0, dtype=torch.bool), (w * x).sum()


def intermediate_prod_method(w, x):
    return (w + x).prod(1, keepdim=True, dtype=torch.bool), (w * x).sum()


def view_of_input(w, x):
    return w[0].sum(dtype=torch.bool), (w * x).sum()


def input_method(w, x):
    return w.sum(dtype=torch.bool), (w * x).sum()


def written_with_grad(w, x):
    x = x.clone()
    x.mul_(w)
    return x.sum(1, dtype=torch.bool), x.sum()


def view_taken_before_a_write(w, x):
    x = x.clone()
    v = x[0]
    x.mul_(w)
    return v.sum(dtype=torch.bool), x.sum()


def written_input(w, x):
    x.mul_(2)
    y = w * x
    return y.prod(dtype=torch.bool), y.sum()


def enable_grad_block(w, x):
    with torch.enable_grad():
        t = w * x
    return t.sum(dtype=torch.bool), (w * x).sum()


RAISING = [intermediate, intermediate_function, intermediate_prod, intermediate_prod_method, view_of_input,
           input_method, written_with_grad, view_taken_before_a_write, written_input, enable_grad_block]


def made_under_no_grad(w, x):
    with torch.no_grad():
        t = w * 2
    return t.sum(1, dtype=torch.bool), (w * x).sum()


def detached(w, x):
    return (w * x).detach().sum(dtype=torch.bool), (w * x).sum()


def integer_value(w, x):
    return (w > 0).sum(dtype=torch.bool), (w * x).sum()


def reduced_with_grad_off(w, x):
    torch.set_grad_enabled(False)
    t = (w * x).sum(dtype=torch.bool)
    torch.set_grad_enabled(True)
    return t, (w * x).sum()


def value_that_requires_no_grad(w, x):
    y = x * 3
    x.add_(1)
    return y.sum(0, dtype=torch.bool), x.prod(dtype=torch.bool), (w * y).sum()


RUNNING = [made_under_no_grad, detached, integer_value, reduced_with_grad_off, value_that_requires_no_grad]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", RAISING, ids=lambda f: f.__name__)
def test_raises_as_eager_does(fn, schedule):
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Bool"):
        fn(*_inputs())
    with pytest.raises(RuntimeError, match=r"(sum|prod)\(dtype=torch.bool\) of a tensor that requires grad"):
        fusion_alias.jit(fn, backend="reference", schedule=schedule)(*_inputs())


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", RAISING, ids=lambda f: f.__name__)
def test_runs_as_eager_does_with_grad_off(fn, schedule):
    with torch.no_grad():
        w_e, x_e = _inputs()
        w_j, x_j = _inputs()
        expected = fn(w_e, x_e)
        got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(w_j, x_j)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(x_j, x_e)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", RUNNING, ids=lambda f: f.__name__)
def test_runs_as_eager_does(fn, schedule):
    w_e, x_e = _inputs()
    w_j, x_j = _inputs()
    expected = fn(w_e, x_e)
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(w_j, x_j)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape and g.requires_grad == e.requires_grad
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(x_j, x_e)
    expected[-1].backward()
    got[-1].backward()
    torch.testing.assert_close(w_j.grad, w_e.grad)
