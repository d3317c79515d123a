"""Session 29: ``.grad`` of a tensor that does not require grad but has one, read inside the function.

Thunder 0.2.6 traces it as None (plain ``thunder.jit`` too): such a program is refused by name; programs that
read ``.grad`` of tensors without one run as eager (trace_time_queries.py, Note [.grad of a tensor that requires
no grad]). Every test ends in a call that the code before session 29 ran, silently wrong.
"""

import re

import pytest
import torch
from torch import nn

import fusion_alias



def _refused(where: str) -> str:
    """The refusal's text (a regex) for the tensor at ``where``."""
    return re.escape(f"reads `.grad` of a tensor that does not require grad while it has a .grad ({where})") + (
        ".*Thunder 0\\.2\\.6 traces it as None.*Workaround: make the tensor require grad")


def _fresh(t):
    """A copy of ``t`` with its class, requires_grad and ``.grad``."""
    c = t.detach().clone()
    if isinstance(t, nn.Parameter):
        c = nn.Parameter(c, requires_grad=t.requires_grad)
    else:
        c.requires_grad_(t.requires_grad)
    if t.grad is not None:
        c.grad = t.grad.clone()
    return c


def _check(fn, jitted, *args):
    """``jitted(*args)`` gives eager's result and leaves the arguments as eager does, on fresh copies."""
    eager_args = [[_fresh(t) for t in a] if isinstance(a, list) else _fresh(a) for a in args]
    want = fn(*eager_args)
    got = jitted(*args)
    torch.testing.assert_close(got, want)
    for a, e in zip(args, eager_args):
        for t, u in zip(a if isinstance(a, list) else [a], e if isinstance(e, list) else [e]):
            torch.testing.assert_close(t.detach(), u.detach())


def _add_grad(x):
    if x.grad is not None:
        return x + x.grad
    return x * 2


def _plain(grad):
    x = torch.ones(3)
    if grad:
        x.grad = torch.full((3,), 5.)
    return x


def _frozen(grad):
    p = nn.Parameter(torch.ones(3), requires_grad=False)
    if grad:
        p.grad = torch.full((3,), 7.)
    return p


@pytest.mark.parametrize("make", [_plain, _frozen], ids=["tensor", "frozen_parameter"])
def test_argument_with_a_grad_is_refused_and_the_cache_follows_it(make):
    """The worked example of the Note: without a .grad it runs (eager 2x); with one it is refused (eager
    x + x.grad; the old code returned 2x); without one again it runs."""
    jitted = fusion_alias.jit(_add_grad)
    _check(_add_grad, jitted, make(False))
    with pytest.raises(NotImplementedError, match=_refused("args[0]")):
        jitted(make(True))
    _check(_add_grad, jitted, make(False))
    with pytest.raises(NotImplementedError, match="set its .grad to None"):
        fusion_alias.jit(_add_grad)(make(True))  # (refused on a first call too)


def _grad_of_written(x):
    y = x.mul_(1)  # eager: y is x, so y.grad is x.grad
    return y * 2 if y.grad is None else y + y.grad


def test_grad_of_an_inplace_result_is_the_argument_s():
    jitted = fusion_alias.jit(_grad_of_written)
    _check(_grad_of_written, jitted, _plain(False))
    with pytest.raises(NotImplementedError, match=_refused("args[0]")):
        jitted(_plain(True))


G = torch.ones(3)
H = torch.ones(3)


def _global_read(x):
    if G.grad is not None:
        return x + G + G.grad
    return x + G


def _global_read_only_for_grad(x):
    return x * 2 if H.grad is None else x * 3


@pytest.mark.parametrize("fn,name", [(_global_read, "G"), (_global_read_only_for_grad, "H")])
def test_global_with_a_grad_is_refused_and_the_cache_follows_it(fn, name):
    """A global the computation reads (keyed as a computation input) and one read only for its ``.grad`` (never
    an input of the computation: its record is checked again on each call)."""
    t = globals()[name]
    jitted = fusion_alias.jit(fn)
    try:
        _check(fn, jitted, torch.ones(3))
        _check(fn, jitted, torch.ones(3))  # (the cached program)
        t.grad = torch.full((3,), 5.)
        with pytest.raises(NotImplementedError, match=_refused(f"the global {name}")):
            jitted(torch.ones(3))
        t.grad = None
        _check(fn, jitted, torch.ones(3))
    finally:
        t.grad = None


class _Frozen(nn.Module):
    def __init__(self, use_weight: bool):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.lin.weight.requires_grad_(False)
        self.use_weight = use_weight

    def forward(self, x):
        w = self.lin.weight
        y = x @ w.t() if self.use_weight else x * 2
        return y + 1 if w.grad is None else y + w.grad.sum()


@pytest.mark.parametrize("use_weight", [True, False], ids=["weight_used", "weight_read_only_for_grad"])
def test_module_frozen_parameter_with_a_grad_is_refused(use_weight):
    torch.manual_seed(0)
    module = _Frozen(use_weight)
    jitted = fusion_alias.jit(module)
    x = torch.randn(2, 3)
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(jitted(x), module(x))
        module.lin.weight.grad = torch.ones(3, 3)
        with pytest.raises(NotImplementedError, match=_refused("self.lin.weight")):
            jitted(x)
        module.lin.weight.grad = None
        torch.testing.assert_close(jitted(x), module(x))


def _step(ps):
    for p in ps:
        if p.grad is None:
            continue
        p.sub_(p.grad, alpha=0.5)


def test_optimizer_loop_over_frozen_parameters_without_grad_runs():
    """``if p.grad is None: continue`` over frozen parameters with no gradient is not refused; a trainable
    parameter with a gradient is stepped (Thunder's own .grad); a frozen one that gains a stale gradient is
    refused (the old code skipped it, where eager steps it)."""

    def params():
        trainable = nn.Parameter(torch.arange(3.))
        trainable.grad = torch.full((3,), 2.)
        return [trainable, _frozen(False), _frozen(False)]

    jitted = fusion_alias.jit(_step)
    with torch.no_grad():
        for _ in range(2):
            _check(_step, jitted, params())
        ps = params()
        ps[2].grad = torch.ones(3)
        with pytest.raises(NotImplementedError, match=_refused("args[0][2]")):
            jitted(ps)
        _check(_step, jitted, params())


def _reads_other(x, ps):
    s = x * 1
    for p in ps:
        if p.grad is not None:
            s = s + p.grad
    return s


def test_only_the_tensor_whose_grad_is_read_decides():
    """An argument with a stale ``.grad`` whose ``.grad`` the program does not read runs (its value is read as
    eager reads it); the refusal names the tensor read."""
    jitted = fusion_alias.jit(_reads_other)
    with torch.no_grad():
        _check(_reads_other, jitted, _plain(True), [_frozen(False)])
        with pytest.raises(NotImplementedError, match=_refused("args[1][0]")):
            jitted(_plain(True), [_frozen(True)])


def test_a_tensor_that_requires_grad_keeps_thunder_s_grad():
    """Thunder's own ``.grad`` of a leaf that requires grad is unchanged, with and without gradients; in the
    same program a plain tensor with a ``.grad`` is refused."""

    def f(w, x):
        out = w + w.grad if w.grad is not None else w * 2
        return out + (x.grad if x.grad is not None else x)

    jitted = fusion_alias.jit(f)
    for mode in (False, True):
        with torch.set_grad_enabled(mode):
            w = nn.Parameter(torch.ones(3))
            w.grad = torch.full((3,), 7.)
            _check(f, jitted, w, _plain(False))
    w = nn.Parameter(torch.ones(3))
    w.grad = torch.full((3,), 7.)
    with pytest.raises(NotImplementedError, match=_refused("args[1]")):
        jitted(w, _plain(True))
