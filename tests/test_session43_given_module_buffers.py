"""Session 43: a buffer rebound on a module the call was given (an argument, or a module reached through a
global) is set as eager sets it (given_module_buffers.py, Note [a buffer rebound on a module the call was given]).

Thunder 0.2.6 fails on such a store with a bare ``AssertionError`` (plain ``thunder.jit`` too), and fusion_alias
refused it: 37% of the runs of fuzz seed 36314 (``modules --grad``), 20% after. Each program runs four calls
(module ``a``, ``a``, then another module ``b`` through the cached program, then ``a``) against eager on fresh
modules: outputs, every buffer after each call, whether a buffer stayed the same tensor object, gradients.
"""

import pytest
import torch
import torch.nn as nn

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES


def _module():
    m = nn.Module()
    m.register_buffer("steps", torch.zeros(()))
    m.register_buffer("ema", torch.zeros(3))
    m.w = nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))
    m.sub = nn.Module()
    m.sub.register_buffer("buf", torch.ones(3))
    return m


G = _module()  # a module the programs reach through their globals


def counter(m, x):
    m.steps += 1  # __iadd__ in place, then a store of the same tensor
    return x * m.steps


def rebind_new(m, x):
    m.ema = m.ema * 0.5 + x
    return (x * m.w).sum() + m.ema.sum()


def rebind_global(m, x):
    G.ema = G.ema * 0.25 + x
    return (x * m.w).sum() + G.ema.sum()


def rebind_submodule(m, x):
    m.sub.buf = m.sub.buf * x
    return m.sub.buf * m.w


def several(m, x):
    m.steps += 1
    m.ema = m.ema * 0.5 + x.detach()
    G.ema = G.ema * 0.25 + m.ema
    return (x * m.w * m.steps).sum() + G.ema.sum()


def written_then_rebound(m, x):
    m.ema.add_(x)
    m.ema = m.ema * 2
    return m.ema * m.w


PROGRAMS = [counter, rebind_new, rebind_global, rebind_submodule, several, written_then_rebound]


def _state(m):
    return {name: b.detach().clone() for name, b in m.named_buffers()}


def _calls(fn, grad: bool):
    """Four calls (modules a, a, b, a); per call: the output, each module's and G's buffers, which buffers kept
    their tensor object, and the parameters' gradients."""
    G.steps.zero_(), G.ema.zero_(), G.sub.buf.fill_(1.0)
    a, b = _module(), _module()
    seen = []
    for k, m in enumerate([a, a, b, a]):
        before = {name: buf for name, buf in m.named_buffers()}
        x = torch.arange(3.0) + k
        out = fn(m, x)
        if grad and out.requires_grad:
            out.sum().backward()
        kept = sorted(name for name, buf in m.named_buffers() if buf is before[name])
        seen.append((out.detach().clone(), _state(a), _state(b), _state(G), kept,
                     [None if p.grad is None else p.grad.clone() for p in (a.w, b.w)]))
    return seen


def _assert_same(got, want):
    for call, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g[0], w[0], msg=f"call {call} output")
        for which in (1, 2, 3):
            assert g[which].keys() == w[which].keys()
            for name in w[which]:
                torch.testing.assert_close(g[which][name], w[which][name], msg=f"call {call} buffer {name}")
        assert g[4] == w[4], f"call {call}: buffers kept as objects {g[4]}, eager {w[4]}"
        for gg, ww in zip(g[5], w[5]):
            assert (gg is None) == (ww is None)
            if ww is not None:
                torch.testing.assert_close(gg, ww)


@pytest.mark.parametrize("grad", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_matches_eager(fn, grad):
    want = _calls(fn, grad)
    for schedule in SCHEDULES:
        _assert_same(_calls(fusion_alias.jit(fn, backend="reference", schedule=schedule), grad), want)


def test_no_grad_call_matches_eager():
    def run(fn):
        with torch.no_grad():
            return _calls(fn, False)

    want = run(several)
    for schedule in SCHEDULES:
        _assert_same(run(fusion_alias.jit(several, backend="reference", schedule=schedule)), want)

