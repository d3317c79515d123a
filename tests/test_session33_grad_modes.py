"""Session 33: ``torch.enable_grad()`` inside a call made under ``torch.no_grad()``.

A value made in the block from tensors none of which requires grad came back requiring grad (Thunder's
autograd Function marks every floating output; modules fuzz seed 26203 #28, plain ``thunder.jit`` too):
the check that gives outputs eager's marks was asked only with grad mode on at the call
(constant_outputs.py, ``computes_gradients``). Each test compares values, ``requires_grad`` of every
output and the gradients a backward through the outputs that require grad gives, with eager."""

import pytest
import torch

import fusion_alias

SCHEDULES = ("reads-first", "writes-first")


def _block_of_constant_and_gradient(a, w):
    with torch.enable_grad():
        y = a * 2
        z = a * w
    return y, z


def _block_then_no_grad(a, w):
    with torch.enable_grad():
        z = (a * w).tanh()
    return z, a * w, z.detach() + 1


def _writes_in_the_block(a, w):
    with torch.enable_grad():
        a.mul_(2)
        z = a * w
        y = a + 1
    return y, z


class _Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 9).reshape(3, 3))

    def forward(self, a):
        with torch.enable_grad():
            y = a @ self.w.detach().t()
            z = a @ self.w.t()
        return y, z


def _compare(eager_out, got_out, grads_of):
    assert [t.requires_grad for t in got_out] == [t.requires_grad for t in eager_out]
    for e, g in zip(eager_out, got_out):
        torch.testing.assert_close(g.detach(), e.detach())
    loss_e = sum(t.sum() for t in eager_out if t.requires_grad)
    loss_g = sum(t.sum() for t in got_out if t.requires_grad)
    ge = torch.autograd.grad(loss_e, grads_of[0])
    gg = torch.autograd.grad(loss_g, grads_of[1])
    for e, g in zip(ge, gg):
        torch.testing.assert_close(g, e)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn", [_block_of_constant_and_gradient, _block_then_no_grad, _writes_in_the_block])
def test_outputs_of_an_enable_grad_block_under_no_grad(fn, schedule):
    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):  # the compiling call and a cached one
        w_e = torch.linspace(0.5, 1.5, 3).requires_grad_()
        w_g = w_e.detach().clone().requires_grad_()
        a_e, a_g = torch.arange(3.0), torch.arange(3.0)
        with torch.no_grad():
            eager_out, got_out = fn(a_e, w_e), jitted(a_g, w_g)
        torch.testing.assert_close(a_g, a_e)
        _compare(eager_out, got_out, ([w_e], [w_g]))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_module_output_through_detach_in_the_block(schedule):
    eager, compiled = _Linear(), _Linear()
    jitted = fusion_alias.jit(compiled, backend="reference", schedule=schedule)
    a = torch.linspace(-2.0, 2.0, 6).reshape(2, 3)
    with torch.no_grad():
        eager_out, got_out = eager(a), jitted(a)
    _compare(eager_out, got_out, ([eager.w], [compiled.w]))
