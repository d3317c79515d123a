"""Session 29: module state written from values that require grad, over several training calls.

The write-back gives the state eager's ``requires_grad`` with a history through the call's Thunder node; the
next call's node had an edge to that history, so its backward ran the last call's node again ("Trying to
backward through the graph a second time", fuzz seed 60002 #10 and #37, modules --grad) where eager, whose
loss does not read the state, runs (spent_histories.py, Note [a history through a backward that already ran]).
Each test compares with eager on a fresh copy of the module: outputs, state, its ``requires_grad``, and the
gradients (None as zeros: the write-back's zero cotangent gives ``p`` a zero ``.grad`` where eager's is None).
"""

import pytest
import torch
from torch import nn

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import AliasInputError


class _Ema(nn.Module):
    """A parameter, a view of it kept as an attribute, and an EMA buffer of that view."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.flat = nn.Parameter(torch.rand(20, generator=g) * 2 - 1)
        self.w = self.flat[0:16].view(4, 4)
        self.scale = nn.Parameter(torch.rand(4, generator=g) + 0.5)
        self.register_buffer("ema", torch.rand(4, 4, generator=g))

    def forward(self, a):
        self.ema.mul_(0.9).add_(self.w, alpha=0.1)
        return (a * self.scale).tanh()


def _step(m, a):
    """The fuzz repro, shrunk: the state update reads a view of a parameter; the loss never reads ``ema``."""
    m.ema.mul_(0.9).add_(m.w, alpha=0.1)
    return (a * m.scale).tanh()


def _step_reading_ema(m, a):
    m.ema.mul_(0.9).add_(m.w, alpha=0.1)
    return (a * m.scale).tanh() + m.ema[0]


def _grads(m, leaf):
    return [torch.zeros_like(t) if t.grad is None else t.grad.clone() for t in [*m.parameters(), leaf]]


def _call(fn, m, a_shape, call, self_entry):
    """One training call on fresh arguments: (output, state, ema.requires_grad, gradients)."""
    g = torch.Generator().manual_seed(100 + call)
    leaf = (torch.rand(a_shape, generator=g) * 2 - 1).requires_grad_()
    a = leaf * 1
    out = fn(a) if self_entry else fn(m, a)
    weights = torch.rand(out.shape, generator=g)
    (out * weights).sum().backward()
    return out.detach().clone(), m.ema.detach().clone(), m.ema.requires_grad, _grads(m, leaf)


def _check_calls(make_jit, fn, shapes, self_entry=False):
    m_want, m_got = _Ema(), _Ema()  # (the same values: a seeded generator)
    jitted = make_jit(m_got)
    for call, shape in enumerate(shapes):
        want = _call(m_want if self_entry else fn, m_want, shape, call, self_entry)
        got = _call(jitted, m_got, shape, call, self_entry)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
        assert got[2] == want[2]
        for g, w in zip(got[3], want[3]):
            torch.testing.assert_close(g, w)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_state_written_from_a_parameter_over_training_calls(schedule):
    _check_calls(lambda m: fusion_alias.jit(_step, backend="reference", schedule=schedule), _step, [(4,)] * 3)


def test_jitted_module_writing_its_state_over_training_calls():
    _check_calls(lambda m: fusion_alias.jit(m, backend="reference"), None, [(4,)] * 3, self_entry=True)


def test_a_call_that_compiles_after_a_backward():
    """Call 2 compiles a new program (another shape) with ``ema``'s history already spent: cut there too."""
    _check_calls(lambda m: fusion_alias.jit(_step, backend="reference"), _step, [(4,), (2, 4), (2, 4), (4,)])


def test_two_calls_then_one_backward_keeps_the_history():
    """No backward between the calls: call 2's loss reads ``ema``, whose gradient runs through call 1's node
    (not spent, not cut) into ``flat`` as in eager."""
    m_want, m_got = _Ema(), _Ema()
    jitted = fusion_alias.jit(_step_reading_ema, backend="reference")
    for fn, m in ((_step_reading_ema, m_want), (jitted, m_got)):
        a1, a2 = torch.linspace(-1, 1, 4), torch.linspace(1, -2, 4)
        (fn(m, a1).sum() + 2 * fn(m, a2).sum()).backward()
    torch.testing.assert_close(m_got.ema.detach(), m_want.ema.detach())
    torch.testing.assert_close(m_got.flat.grad, m_want.flat.grad)
    torch.testing.assert_close(m_got.scale.grad, m_want.scale.grad)


def test_a_loss_reading_the_state_after_a_backward_is_refused_by_name():
    """Eager sends call 2's gradient through ``ema``'s history into call 1's ops; call 1's Thunder node has
    run its backward already and cannot run again: refused by name (was PyTorch's "backward through the graph
    a second time"), never dropped."""
    m = _Ema()
    jitted = fusion_alias.jit(_step_reading_ema, backend="reference")
    jitted(m, torch.ones(4)).sum().backward()
    out = jitted(m, torch.ones(4))
    with pytest.raises(AliasInputError, match="whose backward already ran.*not supported"):
        out.sum().backward()


class _RebindsThenWrites(nn.Module):
    """A buffer rebound, then written with a value that requires grad: it requires grad, as eager's does
    (dropped_attributes.py, Note [a write after the value was made]); the loss never reads it."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-1, 1, 3))
        self.register_buffer("kv", torch.ones(4, 3))

    def forward(self, a, k):
        self.kv = self.kv * 0.5
        self.kv[0].copy_(k * 2)
        return (a * self.w).sum()


def test_a_rebound_buffer_written_from_a_value_that_requires_grad_over_training_calls():
    eager, mod = _RebindsThenWrites(), _RebindsThenWrites()
    jitted = fusion_alias.jit(mod, backend="reference")
    for call in range(3):
        g = torch.Generator().manual_seed(call)
        a_leaf, k_leaf = torch.randn(3, generator=g, requires_grad=True), torch.randn(3, generator=g, requires_grad=True)
        eager(a_leaf * 1, k_leaf * 1).backward()
        want = (eager.kv.detach().clone(), eager.kv.requires_grad, eager.w.grad.clone(), a_leaf.grad, k_leaf.grad)
        a_leaf.grad = k_leaf.grad = None
        jitted(a_leaf * 1, k_leaf * 1).backward()
        got = (mod.kv.detach().clone(), mod.kv.requires_grad, mod.w.grad.clone(), a_leaf.grad, k_leaf.grad)
        assert got[1] == want[1], f"call {call}"
        torch.testing.assert_close(got[0], want[0], msg=f"call {call}")
        for x, y in zip(got[2:], want[2:]):
            torch.testing.assert_close(x if x is not None else torch.zeros(3), y if y is not None else torch.zeros(3))
