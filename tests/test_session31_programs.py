"""Session 31: small real programs (optimizer steps, BatchNorm statistics, KV-cache decode steps, rotary
embeddings, EMA, gradient clipping, tied weights, recurrent state) compared with eager over several calls, on
every reference schedule: outputs, every input the program writes, and the leaves' gradients.

Two found bugs: rotary embeddings through ``view_as_complex`` got a wrong gradient (Thunder 0.2.6's complex
gradients do not conjugate; refusals/complex_gradients.py, Note [a complex product's gradient conjugates]), and
``self.n += 1`` on a buffer of the module called was refused in a training call (functionalized_epilogue.py).
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import AliasInputError
from tests.grad_helpers import assert_matches_eager


def _rnd(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _flat(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    return []


def _snapshot(state, out):
    return [t.detach().clone() for t in _flat(state) + _flat(out)]


def assert_steps_match(fn, make, step, calls=3):
    """``step(f, state, i)`` called ``calls`` times on one state: eager's outputs and state after every call, on
    every schedule (the first call compiles, later ones hit the cache)."""
    state = make()
    want = [_snapshot(state, step(fn, state, i)) for i in range(calls)]
    for schedule in SCHEDULES:
        state = make()
        jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
        for i in range(calls):
            got = _snapshot(state, step(jitted, state, i))
            assert len(got) == len(want[i])
            for g, w in zip(got, want[i]):
                torch.testing.assert_close(g, w, msg=lambda m: f"{schedule}, call {i}: {m}")


# ---- bug 1: complex gradients (rotary embeddings as Llama writes them)


def _rope(q, k, freqs):
    qc = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    kc = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
    return torch.view_as_real(qc * freqs).flatten(-2).type_as(q), torch.view_as_real(kc * freqs).flatten(-2).type_as(k)


def _rope_inputs():
    t = torch.arange(6, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, 4, 2).float() / 4))
    freqs = torch.polar(torch.ones(6, 2), torch.outer(t, inv)).view(1, 6, 1, 2)
    q, k = _rnd(2, 6, 2, 4, seed=1).requires_grad_(), _rnd(2, 6, 2, 4, seed=2).requires_grad_()
    return [q, k], (q, k, freqs)


def test_rotary_complex_gradient():
    """q.grad is g * conj(freqs); Thunder's rule gave g * freqs (plain thunder.jit still does)."""
    assert_matches_eager(_rope, _rope_inputs)


@pytest.mark.parametrize("op", ["mul", "div", "scalar", "square", "addcmul", "sum"])
def test_complex_product_gradients(op):
    fns = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b, "scalar": lambda a, b: a * (2 + 1j) + b,
           "square": lambda a, b: a * a - b, "addcmul": lambda a, b: a.addcmul(a, b, value=0.5),
           "sum": lambda a, b: (a * b).sum() * b}

    def fn(a, b):
        return torch.view_as_real(fns[op](a, b))

    def inputs():
        g = torch.Generator().manual_seed(3)
        a = torch.randn(4, dtype=torch.complex64, generator=g).requires_grad_()
        b = torch.randn(4, dtype=torch.complex64, generator=g).requires_grad_()
        return [a, b], (a, b)

    assert_matches_eager(fn, inputs)


@pytest.mark.parametrize("op", ["exp", "tanh", "sqrt", "matmul"])
def test_complex_gradients_thunder_gets_wrong_are_refused(op):
    fns = {"exp": torch.exp, "tanh": torch.tanh, "sqrt": torch.sqrt, "matmul": lambda a: a @ a.view(4, 1)}
    a = torch.randn(4, dtype=torch.complex64).requires_grad_()
    with pytest.raises(AliasInputError, match="complex tensor .* not conjugated"):
        fusion_alias.jit(lambda a: torch.view_as_real(fns[op](a)), backend="reference")(a)
    with torch.no_grad():  # (no gradient: it runs)
        want = torch.view_as_real(fns[op](a))
        torch.testing.assert_close(fusion_alias.jit(lambda a: torch.view_as_real(fns[op](a)))(a), want)


# ---- bug 2: a counter buffer of the module called, `self.n += 1`, in a training step


class _Counted(nn.Module):
    def __init__(self, sub=False):
        super().__init__()
        self.w = nn.Parameter(torch.linspace(0.5, 1.5, 4))
        self.register_buffer("n", torch.zeros(()))
        self.sub = nn.Module()
        self.sub.register_buffer("n", torch.zeros(()))
        self.on_sub = sub

    def forward(self, x):
        if self.on_sub:
            self.sub.n += 1
            self.sub.n.mul_(2)
            return x * self.w * self.sub.n
        self.n += 1
        return x * self.w * self.n


def _training_calls(m, f, calls=3):
    held = (m.n, m.sub.n)
    rows = []
    for i in range(calls):
        x = _rnd(3, 4, seed=10 + i).requires_grad_()
        out = f(x)
        (out * torch.arange(12.0).view(3, 4)).sum().backward()
        rows.append((out.detach(), x.grad, m.w.grad.clone(), m.n.clone(), m.sub.n.clone()))
    assert m.n is held[0] and m.sub.n is held[1]  # (eager's buffers stay the objects they were)
    return rows


@pytest.mark.parametrize("sub", [False, True])
def test_counter_buffer_iadd_in_training(sub):
    """``self.n += 1`` stores ``n`` onto itself: was refused as "rebinds the buffer 'n' to a view of memory the call
    was given" (plain thunder.jit runs it); functionalized_epilogue.py, Note [a buffer stored onto itself,
    functionalized]."""
    m = _Counted(sub)
    want = _training_calls(m, m)
    for schedule in SCHEDULES:
        m = _Counted(sub)
        got = _training_calls(m, fusion_alias.jit(m, backend="reference", schedule=schedule))
        for g, w in zip(got, want):
            for a, b in zip(g, w):
                torch.testing.assert_close(a, b)


def test_buffer_rebound_to_another_buffers_memory_still_refused():
    class Other(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(4))
            self.register_buffer("n", torch.zeros(()))
            self.register_buffer("m", torch.zeros(()))

        def forward(self, x):
            self.m = self.n.add_(1)  # (eager: m is n's tensor; a functionalized call would store a copy)
            return x * self.w

    with pytest.raises(AliasInputError, match="rebinds the buffer 'm'"):
        fusion_alias.jit(Other(), backend="reference")(torch.ones(4, requires_grad=True))
