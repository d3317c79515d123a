"""Calls that compute gradients: what fusion_alias runs, and what it refuses with a clear error.

Such calls go through Thunder's autodiff (Note [autograd keeps Thunder's alias pass]
in api.py). Thunder 0.2.6 loses in-place writes into inputs that require grad, or
the gradient through them, without an error (Note [writes into inputs that
require grad] in executor.py): those are refused, with workarounds that work.
"""

from __future__ import annotations

import pytest
import torch

import fusion_alias

LIMITATION = "requires grad, in a call that computes gradients: not supported"


def _grad_inputs(seed=0, n=2, shape=(3, 3)):
    """Leaves w_i and non-leaf inputs x_i = w_i * 1 (eager allows writing into those)."""
    g = torch.Generator().manual_seed(seed)
    ws = [torch.randn(*shape, generator=g).requires_grad_() for _ in range(n)]
    return ws, [w * 1 for w in ws]


def _grads_match(fn, jitted, n=2):
    ws_e, xs_e = _grad_inputs(n=n)
    ws_j, xs_j = _grad_inputs(n=n)
    want, got = fn(*xs_e), jitted(*xs_j)
    torch.testing.assert_close(got, want)
    for x_j, x_e in zip(xs_j, xs_e):
        torch.testing.assert_close(x_j.detach(), x_e.detach())  # mutated inputs too
    weights = torch.arange(want.numel(), dtype=want.dtype).reshape(want.shape)
    (want * weights).sum().backward()
    (got * weights).sum().backward()
    for w_j, w_e in zip(ws_j, ws_e):
        assert (w_j.grad is None) == (w_e.grad is None)
        if w_e.grad is not None:
            torch.testing.assert_close(w_j.grad, w_e.grad)


def write_into_grad_input(a, b):
    a.add_(1)
    return a * b  # Thunder 0.2.6: a's gradient comes back None


def write_through_view_of_grad_input(a, b):
    a[0:2].add_(1)
    return a * b  # Thunder 0.2.6 (our pass before this check): the write is lost


@pytest.mark.parametrize("fn", [write_into_grad_input, write_through_view_of_grad_input])
def test_write_into_an_input_that_requires_grad_is_refused(fn):
    _grads_match(fn, fn)  # eager accepts it and computes a gradient
    _, xs = _grad_inputs()
    with pytest.raises(fusion_alias.AliasInputError, match=LIMITATION) as err:
        fusion_alias.jit(fn)(*xs)
    assert "a = a.clone()" in str(err.value) and "torch.no_grad()" in str(err.value)


def test_workaround_clone_gives_eager_values_and_gradients():
    def fn(a, b):
        a = a.clone()
        a.add_(1)
        return a * b

    _grads_match(fn, fusion_alias.jit(fn))


def test_write_into_a_tensor_the_program_makes_is_differentiated():
    def fn(a, b):
        c = a * 2
        c.add_(b)
        c.tanh_()
        return c * a

    _grads_match(fn, fusion_alias.jit(fn))


@pytest.mark.parametrize("schedule", ["reads-first", "writes-first"])
def test_workaround_no_grad_runs_the_write(schedule):
    jitted = fusion_alias.jit(write_into_grad_input, schedule=schedule)
    _, xs_e = _grad_inputs()
    _, xs_j = _grad_inputs()
    with torch.no_grad():
        want, got = write_into_grad_input(*xs_e), jitted(*xs_j)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xs_j[0], xs_e[0])


def test_aliased_inputs_of_different_sizes_with_gradients_get_a_clear_error():
    def fn(a, b):
        c = a * 2
        c.add_(b)  # any in-place op makes Thunder's alias pass reshape b into a's shape
        return c

    _, (x,) = _grad_inputs(n=1)
    fn(x, x[0, 0]).sum().backward()  # eager: fine
    _, (x,) = _grad_inputs(n=1)
    with pytest.raises(fusion_alias.AliasInputError, match=r"share memory with different sizes") as err:
        fusion_alias.jit(fn)(x, x[0, 0])
    assert "#0 (3, 3), #1 ()" in str(err.value) and "Attempting to reshape" in str(err.value)
    # the workaround: pass a clone, so that the arguments do not share memory
    (w_e,), (x_e,) = _grad_inputs(n=1)
    (w_j,), (x_j,) = _grad_inputs(n=1)
    want, got = fn(x_e, x_e[0, 0].clone()), fusion_alias.jit(fn)(x_j, x_j[0, 0].clone())
    torch.testing.assert_close(got, want)
    want.sum().backward()
    got.sum().backward()
    torch.testing.assert_close(w_j.grad, w_e.grad)
